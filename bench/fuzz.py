"""The fuzzers, run longer than the test suite runs them, with their figures.

1. The web listener of a real ``thalos-bot run`` (scripted provider, loopback, a state
   folder of its own): ``--web`` hostile requests from :mod:`tests.web.fuzz_requests`
   (login, approvals, the event stream, the API, webhooks, cookies, CSRF tokens). A
   5xx answer or a dead daemon is a crash. Meanwhile a probe asks for ``/login``
   every 50 ms: its slowest answer is the longest the daemon's event loop stalled.
2. In process: ``--pure`` examples each of the API's body reader, Slack's event and
   button-press readers, Matrix's event readers and signal-cli's events (Telegram's
   updates have their own long run: ``bench/telegram_recovery.py fuzz``); an exception
   is a crash.
3. In process: ``--email`` raw mails (from :mod:`tests.email.test_header_fuzz`: broken
   encodings, huge and repeated headers, bogus Authentication-Results, folds, NULs, bad
   MIME) through the email channel's reading; an exception, or a mail admitted without
   the trusted server's pass or from another sender, is a crash. Its stall is the
   longest one mail took to read (it is read on the event loop).
4. The Discord channel (the real plug-in, discord.py, pump and runtime) against the
   Discord fake over loopback: ``--discord`` gateway dispatches of any shape from
   :mod:`tests.discord.gateway_events`, each followed by a marker message
   (:mod:`tests.discord.fuzz_gateway`). A dropped connection, a marker never read or an
   error logged is a crash; a ticker on the channel's loop gives the longest stall.

    .venv/bin/python bench/fuzz.py [--web 2000] [--pure 5000] [--discord 5000] [--email 20000]
        [--seed N]

``--only web|pure|discord|email`` runs one target; ``--seed`` replays a run's inputs.

Prints one JSON object: inputs tried, crashes (with a short example of each kind), the
longest stall. Bounded by the counts; loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
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
from hypothesis import HealthCheck, given, seed, settings
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


BATCH = 250
"""Discord events per hypothesis run (see :func:`fuzz`)."""
RUN: dict[str, int | None] = {"seed": None}
"""``--seed``: hypothesis draws the same inputs again from it."""


def fuzz(
    strategy: Any, count: int, check: Callable[[Any], str | None], batch: int | None = None
) -> dict[str, Any]:
    """``count`` examples of ``strategy`` through ``check`` (a crash's kind, or None).

    ``batch``: run them as runs of at most that many, each a fresh hypothesis run (batch
    ``i`` seeded ``--seed + i``). Hypothesis keeps a record of every example's choices
    until its run ends (283,000 tracked objects after 2,500 Discord events), and where the
    code under test shares the process, each full collection that scans them stalls its
    loop: 0.1 s after 500 events, 0.9 s after 2,000. Batches keep that record short."""
    tried = 0
    crashes: dict[str, str] = {}
    size = batch or count
    for index, start in enumerate(range(0, count, size)):

        @settings(
            max_examples=min(size, count - start),
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

        base = RUN["seed"]
        (run if base is None else seed(base + index)(run))()
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
            from tests.web.codes import login_code

            code = login_code(Path(folder) / "state", "p1")
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
    from tests.signal.test_event_fuzz import RULES as SIGNAL_RULES
    from tests.signal.test_event_fuzz import any_event as signal_events
    from tests.signal.test_event_fuzz import from_owner as signal_from_owner
    from thalos_bot.api.body import read_chat
    from thalos_bot.channels.people import Seats
    from thalos_bot.domain.people import People
    from thalos_bot.domain.security import SecurityContext
    from thalos_bot_matrix import events as matrix
    from thalos_bot_slack.approvals import SlackApprovals
    from thalos_bot_slack.inbound import Admission, Ledger

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

    def signal_event(event: Any) -> None:
        if isinstance(event, dict):
            # a number out of range raises: the receiver's guard logs it and goes on
            with contextlib.suppress(TypeError, ValueError, KeyError, OverflowError, OSError):
                SIGNAL_RULES.read(event)

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
        "signal_event": fuzz(signal_from_owner | signal_events, count, quietly(signal_event)),
    }


def discord(count: int) -> dict[str, Any]:
    from tests.discord.fuzz_gateway import fuzzing
    from tests.discord.gateway_events import dispatches

    with (
        tempfile.TemporaryDirectory(prefix="fuzz-discord-") as folder,
        fuzzing(Path(folder)) as channel,
    ):
        worst: dict[str, Any] = {"stall_ms": 0.0}

        def check(event: tuple[str, Any]) -> str | None:
            before = channel.stall.longest
            channel.stall.longest = 0.0
            began = time.monotonic()
            broke = channel.feed(*event)
            stalled = channel.stall.longest
            if stalled * 1000 > worst["stall_ms"]:
                worst.update(
                    stall_ms=round(stalled * 1000, 1),
                    feed_ms=round((time.monotonic() - began) * 1000, 1),
                    event=event[0],
                    input=repr(event[1])[:300],
                    input_chars=len(repr(event[1])),
                )
            channel.stall.longest = max(before, stalled)
            return broke

        found = fuzz(dispatches(channel.ids, channel.bot_user), count, check, batch=BATCH)
        found["worst_input"] = worst
        found["longest_stall_ms"] = round(channel.stall.longest * 1000, 1)
        found["stall_ticks"] = channel.stall.ticks
        found["answers_after"] = channel.still_answers()
    return found


def email(count: int) -> dict[str, Any]:
    from tests.email import test_header_fuzz as mails
    from thalos_bot_email.letter import Refused, read

    slowest = (0.0, b"")

    def judged(raw: bytes) -> object:
        nonlocal slowest
        began = time.monotonic()
        found = read(raw, mails.OWN, mails.AUTHSERV, [mails.ALLOWED])
        slowest = max(slowest, (time.monotonic() - began, raw))
        return found

    def check(raw: bytes) -> str | None:
        return mails.wrong(raw, judged(raw))

    def forged(raw: bytes) -> str | None:
        return None if isinstance(judged(raw), Refused) else "a forged mail admitted"

    anything = st.one_of(mails.raw_mail, mails.letter, mails.huge, st.binary(max_size=4000))
    report: dict[str, Any] = {
        "mail": fuzz(anything, count, check),
        "forged_mail": fuzz(mails.forged_mail, count // 4, forged),
        "longest_stall_s": round(slowest[0], 4),
    }
    # The slowest mail read again: a long first reading that does not come back was the
    # machine's (a collection, another process), not the mail's.
    again = []
    for _ in range(5):
        began = time.monotonic()
        read(slowest[1], mails.OWN, mails.AUTHSERV, [mails.ALLOWED])
        again.append(time.monotonic() - began)
    report["slowest_mail_read_again_s"] = round(min(again), 4)
    return report


TARGETS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "pure": lambda a: pure(a.pure),
    "web": lambda a: web(a.web),
    "discord": lambda a: discord(a.discord),
    "email": lambda a: email(a.email),
}


def main() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser()
    parser.add_argument("--web", type=int, default=2000)
    parser.add_argument("--pure", type=int, default=5000)
    parser.add_argument("--discord", type=int, default=5000)
    parser.add_argument("--only", choices=sorted(TARGETS))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--email", type=int, default=20000)
    args = parser.parse_args()
    RUN["seed"] = args.seed
    began = time.monotonic()
    chosen = [args.only] if args.only else list(TARGETS)
    report: dict[str, Any] = {name: TARGETS[name](args) for name in chosen}
    report["seconds"] = round(time.monotonic() - began, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
