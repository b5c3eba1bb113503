"""The web channel's locks, tried over real HTTP against the running daemon."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.web.codes import login_code
from tests.web.harness import ADMIN_LOGIN, WebDaemon
from tests.web.sse import read_until

pytestmark = pytest.mark.slow

GUARDED = [
    ("GET", "/"),
    ("GET", "/api/events"),
    ("GET", "/static/app.js"),
    ("GET", "/media/anything"),
    ("GET", "/dashboard/"),
    ("GET", "/no/such/page"),
    ("POST", "/api/send"),
    ("POST", "/api/approve"),
    ("POST", "/logout"),
]


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_no_cookie_no_content(daemon: WebDaemon, method: str, path: str) -> None:
    with httpx.Client(base_url=daemon.url) as client:
        answer = client.request(method, path, timeout=10)
    assert answer.status_code == 401
    assert "thalos-bot web pair" in answer.json()["error"]
    assert "script-src 'self'" in answer.headers["content-security-policy"]


def test_a_forged_cookie_is_refused(daemon: WebDaemon) -> None:
    client = daemon.login("p1")
    cookie = client.cookies["thalos_web"]
    payload, _, signature = cookie.partition(".")
    forged = daemon.client()
    forged.cookies.set("thalos_web", f"{payload}.{signature[::-1]}")
    assert forged.get("/").status_code == 401
    assert client.get("/").status_code == 200


def test_the_login_page_is_open_and_its_cookie_is_strict(daemon: WebDaemon) -> None:
    _, code = daemon.pair_link("p2")
    with httpx.Client(base_url=daemon.url) as client:
        assert client.get("/login").status_code == 200
        answer = client.post("/login", data={"code": code}, follow_redirects=False)
    assert answer.status_code == 303
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert "secure" not in cookie  # plain http on loopback; https gets Secure


def test_a_pairing_code_works_once(daemon: WebDaemon) -> None:
    _, code = daemon.pair_link("p3", command=True)
    first, second = daemon.client(), daemon.client()
    assert first.post("/login", data={"code": code}).status_code == 303
    again = second.post("/login", data={"code": code}, follow_redirects=False)
    assert again.status_code == 401
    assert "unknown, used or expired" in again.text
    assert "thalos_web" not in again.headers.get("set-cookie", "")


def test_an_expired_pairing_code_is_refused(daemon: WebDaemon) -> None:
    # Issued at t=0 with the real ten-minute life: long expired by now.
    code = login_code(daemon.folder / "state", "p4", issued_at=0.0)
    with httpx.Client(base_url=daemon.url) as client:
        answer = client.post("/login", data={"code": code}, follow_redirects=False)
    assert answer.status_code == 401


def test_a_forged_or_missing_csrf_token_is_refused(daemon: WebDaemon, fake: AnthropicFake) -> None:
    client = daemon.login("p5")
    token = daemon.csrf(client)
    other = daemon.csrf(daemon.login("p6"))
    for headers in ({}, {"X-CSRF-Token": "forged"}, {"X-CSRF-Token": other}):
        answer = client.post("/api/send", data={"text": "hi"}, headers=headers)
        assert answer.status_code == 403, headers
    cross = client.post(
        "/api/send",
        data={"text": "hi"},
        headers={"X-CSRF-Token": token, "Origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    # Nothing of the refused ones reached the model; the right token does.
    fake.enqueue(text_reply("only this one"))
    answer = client.post("/api/send", data={"text": "hi"}, headers={"X-CSRF-Token": token})
    assert answer.status_code == 202
    events = read_until(client, lambda seen: any(e.kind == "final" for e in seen))
    assert [e.data["html"] for e in events if e.kind == "user"] == ["hi"]


def test_a_ten_megabyte_message_is_refused_cleanly(daemon: WebDaemon, fake: AnthropicFake) -> None:
    client = daemon.login("p7")
    token = daemon.csrf(client)
    huge = "x" * (10 * 1024 * 1024)
    # As the page sends it (multipart) and as a plain form.
    for body in ({"files": {"text": (None, huge)}}, {"data": {"text": huge}}):
        answer = client.post("/api/send", headers={"X-CSRF-Token": token}, **body)
        assert answer.status_code == 413, answer.text
        assert "at most 32,000" in answer.json()["error"]
    fake.enqueue(text_reply("still here"))
    assert (
        client.post("/api/send", data={"text": "ok?"}, headers={"X-CSRF-Token": token}).status_code
        == 202
    )
    events = read_until(client, lambda seen: any(e.kind == "final" for e in seen))
    assert [e.data["html"] for e in events if e.kind == "user"] == ["ok?"]
    assert "still here" in next(e.data["html"] for e in events if e.kind == "final")


def test_a_dashboard_form_without_its_token_changes_nothing(daemon: WebDaemon) -> None:
    client = daemon.login("p1")
    answer = client.post("/dashboard/schedules/none/pause", data={"csrf_token": "forged"})
    assert answer.status_code == 403
    assert client.post("/dashboard/schedules/none/pause").status_code == 403
    assert daemon.client().post("/dashboard/schedules/none/pause").status_code == 401


def test_a_browser_without_a_login_is_told_how_to_get_one(daemon: WebDaemon) -> None:
    answer = daemon.client().get("/", headers={"Accept": "text/html"})
    assert answer.status_code == 401
    assert answer.headers["content-type"].startswith("text/html")
    assert "thalos-bot web pair" in answer.text
    assert '<a href="/login">' in answer.text


def test_the_dashboard_shows_a_person_their_own_and_the_admins_everyones(
    daemon: WebDaemon,
) -> None:
    other = daemon.login("p4")  # a principal, not an owner: a person of their own
    own = other.get("/dashboard/sessions")
    assert own.status_code == 200
    assert "<p>Your own (p4).</p>" in own.text, "their own person's, not everyone's"
    assert "People today" not in own.text, "everyone's day is the admins'"
    audit = other.get("/dashboard/audit")
    assert "only the bot&#x27;s owners see it" in audit.text
    assert other.post("/dashboard/schedules/none/pause").status_code == 403
    assert other.post("/dashboard/people/p1/lift").status_code == 403
    assert other.get("/").status_code == 200, "the chat is still theirs"
    owner = daemon.login("p1")
    assert "Everyone&#x27;s sessions and spend." in owner.get("/dashboard/sessions").text
    admin = daemon.login(ADMIN_LOGIN)  # not an owner, but their person holds admin
    assert "Everyone&#x27;s sessions and spend." in admin.get("/dashboard/sessions").text


def test_a_cookie_kept_from_before_a_logout_is_refused(daemon: WebDaemon) -> None:
    client = daemon.login("p1")
    kept = daemon.client()
    kept.cookies.set("thalos_web", client.cookies["thalos_web"])
    assert kept.get("/").status_code == 200
    answer = client.post("/logout", headers={"X-CSRF-Token": daemon.csrf(client)})
    assert answer.status_code == 200
    assert kept.get("/").status_code == 401, "the server forgot the logout"
    assert kept.get("/api/events").status_code == 401
    assert daemon.login("p1").get("/").status_code == 200, "a new login still works"


def test_an_open_stream_ends_when_its_login_is_logged_out(daemon: WebDaemon) -> None:
    client = daemon.login("p22")
    kept = daemon.client()
    kept.cookies.set("thalos_web", client.cookies["thalos_web"])
    after_logout: list[str] = []
    with kept.stream("GET", "/api/events", timeout=60) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        assert next(lines).startswith("retry:")
        answer = client.post("/logout", headers={"X-CSRF-Token": daemon.csrf(client)})
        assert answer.status_code == 200
        # An open stream sends a keepalive every 15 s: seeing one means it outlived
        # the logout. The server ending it ends this loop.
        for line in lines:
            after_logout.append(line)
            if line.startswith(": keepalive"):
                break
    assert not any(line.startswith(": keepalive") for line in after_logout), after_logout
