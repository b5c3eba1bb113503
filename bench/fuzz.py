"""The fuzzers, run longer than the test suite runs them, with their figures.

1. The web listener of a real ``thalos-bot run`` (scripted provider, loopback, a state
   folder of its own): ``--web`` hostile requests from :mod:`tests.web.fuzz_requests`
   (login, approvals, the event stream, the API, webhooks, cookies, CSRF tokens). A
   5xx answer or a dead daemon is a crash. Meanwhile a probe asks for ``/login``
   every 50 ms: its slowest answer is the longest the daemon's event loop stalled.
2. In process: ``--pure`` examples each of the API's body reader, Slack's event and
   button-press readers and Matrix's event readers; an exception is a crash.

    .venv/bin/python bench/fuzz.py [--web 2000] [--pure 5000]

Prints one JSON object: inputs tried, crashes (with a short example of each kind), the
longest stall. Bounded by the counts; loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.listener_load import free_port, wait_listening
from tests.matrix.test_event_fuzz import room_events
from tests.slack.test_event_fuzz import CONFIG, events, presses
from tests.web.fuzz_requests import HOOK_SECRET, HOOK_SECRET_ENV, HOOKS, Probe, probes, send
from tests.web.test_api_body_fuzz import bodies as api_bodies

CONFIG_TOML = """
state_dir = "state"
[provider]
kind = "scripted"
[channels.console]
enabled = false
[channels.web]
enabled = true
listen = "127.0.0.1:{port}"
principals = ["owner", "p1"]
"""
PROBE_EVERY = 0.05


class Stalls:
    """``/login`` every :data:`PROBE_EVERY` seconds from a thread; the slowest answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.longest = 0.0
        self.asked = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            while not self._stop.wait(PROBE_EVERY):
                began = time.monotonic()
                try:
                    client.get("/login")
                except httpx.HTTPError:
                    continue
                self.longest = max(self.longest, time.monotonic() - began)
                self.asked += 1

    def __enter__(self) -> Stalls:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def fuzz(strategy: Any, count: int, check: Callable[[Any], str | None]) -> dict[str, Any]:
    """``count`` examples of ``strategy`` through ``check`` (a crash's kind, or None)."""
    tried = 0
    crashes: dict[str, str] = {}

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(value: Any) -> None:
        nonlocal tried
        tried += 1
        try:
            kind = check(value)
        except Exception as exc:
            kind = f"{type(exc).__name__}: {exc}"[:200]
        if kind is not None and kind not in crashes:
            crashes[kind] = repr(value)[:300]

    run()
    return {"inputs": tried, "crashes": len(crashes), "kinds": crashes}


def web(count: int) -> dict[str, Any]:
    script = Path(sys.executable).parent / "thalos-bot"
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        config = CONFIG_TOML.format(port=port) + HOOKS
        (Path(folder) / "bot.toml").write_text(config, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "THALOS_BOT_CONFIG"}
        env[HOOK_SECRET_ENV] = HOOK_SECRET
        process = subprocess.Popen(
            [str(script), "run"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_listening(port, process)
            url = f"http://127.0.0.1:{port}"
            from thalos_bot_web.pairing import PairingBook

            code = PairingBook(Path(folder) / "state").issue("p1").code
            with (
                httpx.Client(base_url=url, timeout=30) as client,
                httpx.Client(base_url=url, timeout=30) as plain,
                Stalls(url) as stalls,
            ):
                assert client.post("/login", data={"code": code}).status_code in (200, 303)
                page = client.get("/").text
                csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]

                def check(probe: Probe) -> str | None:
                    if process.poll() is not None:
                        return "the daemon exited"
                    status = send(plain, client, csrf, probe)
                    return f"{status} on {probe.method} {probe.path}" if status >= 500 else None

                found = fuzz(probes, count, check)
            found["longest_stall_ms"] = round(stalls.longest * 1000, 1)
            found["stall_probes"] = stalls.asked
            found["alive_after"] = process.poll() is None
        finally:
            process.terminate()
            process.wait(timeout=30)
    return found


def pure(count: int) -> dict[str, Any]:
    from thalos_bot.api.body import read_chat
    from thalos_bot.channels.people import Seats
    from thalos_bot.domain.people import People
    from thalos_bot.domain.security import SecurityContext
    from thalos_bot_matrix import events as matrix
    from thalos_bot_slack.approvals import SlackApprovals
    from thalos_bot_slack.inbound import Admission
    from thalos_bot_slack.ledger import Ledger

    async def post(*_: Any) -> str:
        return "1.3"

    seats = Seats("slack", People(), SecurityContext.of("owner"), "U0OWNER")

    def slack_event(event: Any) -> None:
        if isinstance(event, dict):
            Admission(CONFIG, Ledger(None), "U0BOT").judge(event)

    def slack_press(body: Any) -> None:
        if isinstance(body, dict):
            SlackApprovals(seats, post).on_action(body)  # type: ignore[arg-type]

    def matrix_event(event: Any) -> None:
        if isinstance(event, dict):
            content = matrix.content_of(event)
            matrix.latest_body(event)
            matrix.reply_target(content)
            matrix.reaction(content)
            matrix.mentions(content, "@thalos:example.org", None)

    def quietly(read: Callable[[Any], object]) -> Callable[[Any], str | None]:
        def check(value: Any) -> str | None:
            read(value)
            return None

        return check

    return {
        "api_body": fuzz(api_bodies, count, quietly(read_chat)),
        "slack_event": fuzz(events, count, quietly(slack_event)),
        "slack_press": fuzz(presses, count, quietly(slack_press)),
        "matrix_event": fuzz(room_events | st.just({}), count, quietly(matrix_event)),
    }


def main() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser()
    parser.add_argument("--web", type=int, default=2000)
    parser.add_argument("--pure", type=int, default=5000)
    args = parser.parse_args()
    began = time.monotonic()
    report: dict[str, Any] = {"pure": pure(args.pure), "web": web(args.web)}
    report["seconds"] = round(time.monotonic() - began, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
