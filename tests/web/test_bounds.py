"""The listener's bounds, on a daemon of its own: a header timeout, a connection cap
kept under the process's descriptor limit, no log flood, a Secure cookie when public,
and a stream that ends when its login expires."""

from __future__ import annotations

import resource
import socket
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from tests.fakes.anthropic_api import AnthropicFake
from tests.web.harness import WebDaemon, web_daemon
from thalos_bot.channels.listeners.bounded import OUT_OF_DESCRIPTORS

pytestmark = pytest.mark.slow

NOFILE = 256
"""The daemon's descriptor limit here (a service has 1,024): idle connections past it
would leave the daemon unable to accept, open a file or reach a platform."""
SESSION_SECONDS = 6.0
"""Long enough to log in and open a stream on a loaded machine, well short of the
stream's 15 s keepalive (which would show it outlived the login)."""
BOUNDS = f"""
public = true
header_timeout = "1s"
session_days = {SESSION_SECONDS / 86400}
"""


@pytest.fixture(scope="module")
def bounded(
    anthropic: AnthropicFake, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebDaemon]:
    folder = tmp_path_factory.mktemp("web-bounded")
    with web_daemon(folder, anthropic.base_url, BOUNDS, nofile=NOFILE) as running:
        yield running


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closes ``sock`` (an empty read) before the read times out."""
    try:
        return sock.recv(4096) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_a_silent_connection_is_closed(bounded: WebDaemon) -> None:
    with socket.create_connection(("127.0.0.1", bounded.port), timeout=30) as sock:
        assert _closed_by_server(sock)


def test_headers_dribbled_a_byte_at_a_time_are_cut_off(bounded: WebDaemon) -> None:
    request = f"GET /login HTTP/1.1\r\nHost: 127.0.0.1:{bounded.port}\r\nX-Pad: ".encode()
    with socket.create_connection(("127.0.0.1", bounded.port), timeout=30) as sock:
        sock.sendall(request)
        cut = False
        for _ in range(120):  # two minutes at most; the timeout is one second
            try:
                sock.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            sock.settimeout(0.5)
            try:
                if sock.recv(4096) == b"":
                    cut = True
                    break
            except TimeoutError:
                continue
            except ConnectionResetError:  # closed with our last byte unread: also a cut
                cut = True
                break
    assert cut, "the server kept waiting for the headers"


def test_idle_connections_past_the_descriptor_limit_leave_the_page_served(
    bounded: WebDaemon,
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = NOFILE + 200
    if soft < wanted + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, wanted + 100), hard))
    lines_before = len(bounded.lines)
    try:
        with ExitStack() as held:
            for _ in range(wanted):
                held.enter_context(socket.create_connection(("127.0.0.1", bounded.port)))
            with httpx.Client(base_url=bounded.url, timeout=30) as client:
                assert client.get("/login").status_code == 200
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    logged = "".join(bounded.lines[lines_before:])
    assert OUT_OF_DESCRIPTORS not in logged, "the daemon ran out of descriptors"
    assert len(logged) < 20_000, f"the log grew by {len(logged)} characters"


def test_a_flood_of_malformed_requests_does_not_flood_the_log(bounded: WebDaemon) -> None:
    lines_before = len(bounded.lines)
    for _ in range(300):
        with socket.create_connection(("127.0.0.1", bounded.port), timeout=30) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            while sock.recv(4096):
                pass  # the 400, then the server closes
    with httpx.Client(base_url=bounded.url, timeout=30) as client:
        assert client.get("/login").status_code == 200
    logged = bounded.lines[lines_before:]
    assert len(logged) < 20, "".join(logged[:40])


def test_an_open_stream_ends_when_its_login_expires(bounded: WebDaemon) -> None:
    _, code = bounded.pair_link("p24")
    with httpx.Client(base_url=bounded.url, timeout=30) as client:
        answer = client.post("/login", data={"code": code}, follow_redirects=False)
        cookie = answer.headers["set-cookie"].split(";")[0]
        seen: list[str] = []
        with client.stream("GET", "/api/events", headers={"Cookie": cookie}) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                seen.append(line)
                if line.startswith(": keepalive"):
                    break  # 15 s of idling: the stream outlived its login
    assert not any(line.startswith(": keepalive") for line in seen), seen


def test_a_public_page_marks_its_cookie_secure(bounded: WebDaemon) -> None:
    """public = true means a TLS proxy in front, on another address (its
    X-Forwarded-Proto is not trusted, so the request looks like plain http here)."""
    _, code = bounded.pair_link("p23")
    with httpx.Client(base_url=bounded.url, timeout=30) as client:
        answer = client.post("/login", data={"code": code}, follow_redirects=False)
    assert answer.status_code == 303
    assert "secure" in answer.headers["set-cookie"].lower()
