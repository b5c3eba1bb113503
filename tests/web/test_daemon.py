"""The web channel's start and stop inside the real ``thalos-bot run``."""

from __future__ import annotations

import signal
import socket
import threading
from pathlib import Path

import httpx
import pytest

from tests.channels.cli_process import run_piped
from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.web.harness import web_config, web_daemon
from tests.web.sse import parse, read_until
from thalos_bot.channels.listeners.server import EXIT_LISTEN

pytestmark = pytest.mark.slow


def test_a_taken_port_stops_the_daemon_with_a_clear_error(
    tmp_path: Path, anthropic: AnthropicFake
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (tmp_path / "bot.toml").write_text(web_config(anthropic.base_url, port))
        result = run_piped(["run"], "", cwd=tmp_path, timeout=90)
    assert result.returncode == EXIT_LISTEN, result.stderr
    assert f"error: channels.web: cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_sigterm_with_a_stream_open_stops_cleanly(tmp_path: Path, anthropic: AnthropicFake) -> None:
    with web_daemon(tmp_path, anthropic.base_url) as daemon:
        client = daemon.login("p1")
        opened = threading.Event()
        ended: list[str] = []

        def listen() -> None:
            with client.stream("GET", "/api/events", timeout=60) as response:
                opened.set()
                try:
                    for _ in parse(response.iter_lines()):
                        pass
                except httpx.HTTPError as exc:
                    ended.append(type(exc).__name__)
                else:
                    ended.append("closed")

        reader = threading.Thread(target=listen, daemon=True)
        reader.start()
        assert opened.wait(30)
        daemon.process.send_signal(signal.SIGTERM)
        assert daemon.process.wait(timeout=30) == 0, "".join(daemon.lines)
        reader.join(timeout=30)
        assert ended == ["closed"], "the stream ended as the server closed it"


def test_a_page_opened_after_a_restart_shows_the_conversation(
    tmp_path: Path, fake: AnthropicFake
) -> None:
    fake.enqueue(text_reply("hello from before the restart"))
    with web_daemon(tmp_path, fake.base_url) as daemon:
        client = daemon.login("p1")
        token = daemon.csrf(client)
        answer = client.post("/api/send", data={"text": "hi"}, headers={"X-CSRF-Token": token})
        assert answer.status_code == 202
        read_until(client, lambda seen: any(e.kind == "final" for e in seen))
    with web_daemon(tmp_path, fake.base_url) as daemon:
        events = read_until(daemon.login("p1"), lambda seen: any(e.kind == "final" for e in seen))
    assert [e.data["html"] for e in events if e.kind == "user"] == ["hi"]
    (final,) = [e for e in events if e.kind == "final"]
    assert "hello from before the restart" in str(final.data["html"])
    assert [e.kind for e in events].index("turn") < [e.kind for e in events].index("final")
