"""Every body-reading route is bounded by the bytes that arrive, not by a declared length.

The bodies go chunked over a raw socket (no ``Content-Length`` to check), and the last
chunk is never sent: a route that does not count would keep waiting for the rest, and
the test would fail on the read's timeout rather than get its answer.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.web.harness import WebDaemon

pytestmark = pytest.mark.slow

CHUNK = b"&" * 4096
CHUNKS = 20
"""80 KiB in all (empty form fields: no single part, nor JSON value, grows past a
parser's own bound): past every small route's limit, and well within the socket buffers, so
sending never waits for a server that stopped reading."""


def _status_of_chunked_post(daemon: WebDaemon, path: str, headers: dict[str, str]) -> int:
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{daemon.port}",
        "Transfer-Encoding: chunked",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        for _ in range(CHUNKS):
            sock.sendall(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
        answer = b""
        while b"\r\n" not in answer:
            got = sock.recv(4096)
            assert got, f"the server closed without an answer: {answer!r}"
            answer += got
    return int(answer.split(b" ", 2)[1])


def _logged_in(daemon: WebDaemon, principal: str) -> tuple[httpx.Client, dict[str, str]]:
    client = daemon.login(principal)
    cookie = client.cookies["thalos_web"]
    return client, {"Cookie": f"thalos_web={cookie}", "X-CSRF-Token": daemon.csrf(client)}


def test_a_chunked_approval_past_its_limit_is_refused(daemon: WebDaemon) -> None:
    client, headers = _logged_in(daemon, "p21")
    status = _status_of_chunked_post(
        daemon, "/api/approve", {**headers, "Content-Type": "application/json"}
    )
    assert status == 413
    assert client.get("/").status_code == 200, "the daemon still serves"


def test_a_chunked_login_form_past_its_limit_is_refused(daemon: WebDaemon) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert _status_of_chunked_post(daemon, "/login", form) == 413


def test_a_chunked_dashboard_form_past_its_limit_is_refused(daemon: WebDaemon) -> None:
    _, headers = _logged_in(daemon, "p18")
    del headers["X-CSRF-Token"]  # a plain form: the token is read from the body
    form = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    assert _status_of_chunked_post(daemon, "/dashboard/schedules/none/pause", form) == 413


def test_the_files_of_a_message_refused_part_way_are_let_go(daemon: WebDaemon) -> None:
    """Each message's files are refused (the model reads no zip), so the intake leaves
    most of them unfetched. Were those held for good, the eighth message would find no
    room among the 64 files held at most, and its send would wait for ever."""
    client = daemon.login("p24")
    headers = {"X-CSRF-Token": daemon.csrf(client)}
    archive = b"PK\x03\x04" + bytes(100)
    files = [("files", (f"backup{n}.zip", archive, "application/zip")) for n in range(10)]
    for _ in range(8):
        answer = client.post(
            "/api/send", data={"text": "unpack"}, files=files, headers=headers, timeout=30
        )
        assert answer.status_code == 202, answer.text
