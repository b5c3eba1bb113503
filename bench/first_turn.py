"""The first answer after a start, against every later one: the real ``thalos-bot run``
process, a fresh one per sample, against the Telegram fake and the Anthropic fake.

    python bench/first_turn.py [--samples 5] [--later 3] [--chunk-delay 0.1]

Each sample starts the fakes and a daemon with a fresh state folder (the sample
configuration's kind of agent: auto-recall on, every shipped skill, Telegram's own
pacing: one message a second per chat, burst 3, and the default 1 s flush), waits for
``READY=1`` on a ``NOTIFY_SOCKET``, and at once hands over one update; then ``--later``
more, one after another. Printed:

* READY after the process started, and how long READY waited for the start-up
  warm-up once the channels were receiving (the ``ready`` log's ``waited_for_warm_up``);
* update-to-request: from the update handed to the fake to the model request reaching
  the Anthropic fake, for the first turn and for the later ones (median, p90) and the
  difference of the medians (target: at most 0.05 s);
* a one-line answer (two chunks ``--chunk-delay`` apart, so a live preview comes first)
  on a fresh daemon, in a private chat (drafts) and in a group (edits): the total from
  the update to the whole line visible, and the final after the model's end (the
  request's arrival plus the stream's scripted delays; target: at most 0.2 s);
* 429s and retry_after violations in the fake (must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tests.channels.cli_process import clean_env, command  # noqa: E402
from tests.daemon_config import anthropic_provider, telegram_daemon_config  # noqa: E402
from tests.fakes.anthropic_api import AnthropicFake, RecordedRequest, text_reply  # noqa: E402
from tests.fakes.telegram_api import TelegramFake  # noqa: E402
from tests.fakes.telegram_groups import push_group_text  # noqa: E402

USER = 4242
GROUP = -1001234567890
MENTION = "@thalos_test_bot"
LINE = ("Hello", ", world.")
VISIBLE = frozenset({"sendMessage", "editMessageText"})
AGENT = """
[logging]
format = "json"
[[agents]]
id = "assistant"
name = "Assistant"
description = "A general assistant."
instructions = "You help."
skills = ["*"]
memory = { enabled = true, top_k = 5 }
"""


@dataclass
class Figures:
    ready: list[float] = field(default_factory=list)
    warm_wait: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    later: list[float] = field(default_factory=list)
    total: dict[str, list[float]] = field(default_factory=dict)
    after_end: dict[str, list[float]] = field(default_factory=dict)
    refused_429: int = 0
    violations: int = 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class Arrivals:
    """A reply factory for the Anthropic fake that notes when each request arrived."""

    def __init__(self, chunk_delay: float) -> None:
        self.at: list[float] = []
        self.chunk_delay = chunk_delay

    def __call__(self, _request: RecordedRequest) -> Any:
        self.at.append(time.monotonic())
        return text_reply(*LINE, chunk_delay=self.chunk_delay)

    @property
    def stream_time(self) -> float:
        """The scripted delays of one reply (one before each chunk)."""
        return self.chunk_delay * len(LINE)


@contextmanager
def daemon(
    folder: Path, telegram: TelegramFake, anthropic: AnthropicFake, mode: str
) -> Iterator[tuple[float, subprocess.Popen[str]]]:
    """A started ``thalos-bot run``; yields when READY=1 came, and its start time."""
    extra = f"groups = [{GROUP}]\n" if mode == "group" else ""
    (folder / "bot.toml").write_text(
        telegram_daemon_config(
            telegram.base_url,
            USER,
            provider=anthropic_provider(anthropic.base_url),
            flush_interval="1s",
            sections=AGENT,
            telegram=extra,
        ),
        encoding="utf-8",
    )
    shutil.copytree(ROOT / "skills", folder / "skills")
    notify = folder / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(notify))
        sock.settimeout(120)
        env = clean_env(
            {
                "TELEGRAM_BOT_TOKEN": telegram.token,
                "ANTHROPIC_API_KEY": "sk-ant-bench-" + secrets.token_hex(8),
                "NOTIFY_SOCKET": str(notify),
            }
        )
        started = time.monotonic()
        with (folder / "daemon.log").open("w", encoding="utf-8") as log:
            process = subprocess.Popen(
                [*command(), "run"],
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                text=True,
            )
        try:
            while "READY=1" not in sock.recv(4096).decode():
                pass
            yield started, process
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def ready_log(stderr: str) -> float | None:
    for line in stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == "ready":
            waited = entry.get("waited_for_warm_up")
            return float(waited) if waited is not None else None
    return None


def one_answer(
    telegram: TelegramFake, arrivals: Arrivals, push: Callable[[], object], chat: int, text: str
) -> tuple[float, float, float]:
    """(update to request, update to the line visible, model's end to the line visible)."""
    asked = len(arrivals.at)
    before = len(telegram.calls(chat_id=chat))
    pushed = time.monotonic()
    push()

    def shown() -> Any:
        return next(
            (
                call
                for call in telegram.calls(chat_id=chat)[before:]
                if call.status == 200
                and call.method in VISIBLE
                and call.response is not None
                and call.response["result"]["text"] == text
            ),
            None,
        )

    final = telegram.wait_for_blocking(shown, 60)
    request = arrivals.at[asked]
    return request - pushed, final.at - pushed, final.at - (request + arrivals.stream_time)


def sample(mode: str, args: argparse.Namespace, figures: Figures) -> None:
    token = "123456:BENCH-" + secrets.token_hex(16)
    arrivals = Arrivals(args.chunk_delay)
    line = "".join(LINE)
    chat = GROUP if mode == "group" else USER
    with (
        TelegramFake(token, per_chat_interval=1.0, burst=3, global_per_second=30) as telegram,
        AnthropicFake() as anthropic,
        tempfile.TemporaryDirectory() as state,
    ):
        if mode == "group":
            telegram.add_chat(GROUP, "supergroup")
        anthropic.enqueue(*[arrivals] * (1 + args.later))

        def push(index: int) -> Callable[[], object]:
            if mode == "group":
                return lambda: push_group_text(telegram, GROUP, USER, f"{MENTION} hi {index}")
            return lambda: telegram.push_text(USER, USER, f"hi {index}")

        with daemon(Path(state), telegram, anthropic, mode) as (started, _process):
            figures.ready.append(time.monotonic() - started)
            to_request, total, after_end = one_answer(telegram, arrivals, push(0), chat, line)
            figures.first.append(to_request)
            figures.total.setdefault(mode, []).append(total)
            figures.after_end.setdefault(mode, []).append(after_end)
            for index in range(1, 1 + args.later):
                time.sleep(1.1)  # past the chat's pacing, as a person would type
                to_request, _, _ = one_answer(telegram, arrivals, push(index), chat, line)
                figures.later.append(to_request)
        waited = ready_log((Path(state) / "daemon.log").read_text(encoding="utf-8"))
        if waited is not None:
            figures.warm_wait.append(waited)
        figures.refused_429 += sum(1 for c in telegram.calls() if c.status == 429)
        figures.violations += len(telegram.retry_after_violations)


def show(label: str, values: list[float]) -> None:
    if not values:
        print(f"  {label:<52} (no samples)")
        return
    print(
        f"  {label:<52} p50 {statistics.median(values):6.3f} s   "
        f"p90 {percentile(values, 0.9):6.3f} s   (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5, help="fresh daemons per mode")
    parser.add_argument("--later", type=int, default=3, help="later turns per daemon")
    parser.add_argument("--chunk-delay", type=float, default=0.1)
    args = parser.parse_args()
    os.environ.setdefault("NO_COLOR", "1")
    figures = Figures()
    for index in range(args.samples):
        for mode in ("private", "group"):
            sample(mode, args, figures)
            print(f"sample {index + 1}/{args.samples} ({mode}) done", file=sys.stderr)
    print(f"first turn after a start: {args.samples * 2} fresh daemons")
    show("READY after the process started", figures.ready)
    show("READY waited for the warm-up", figures.warm_wait)
    show("update to model request, first turn", figures.first)
    show("update to model request, later turns", figures.later)
    difference = statistics.median(figures.first) - statistics.median(figures.later)
    print(f"  {'first minus later (medians)':<52} {difference:+.3f} s   (target <= 0.050 s)")
    for mode, label in (("private", "private chat, drafts"), ("group", "group, edits")):
        show(f"one-line, update to visible ({label})", figures.total.get(mode, []))
        show(f"one-line, model end to final ({label})", figures.after_end.get(mode, []))
    print(f"  429s: {figures.refused_429}   retry_after violations: {figures.violations}")


if __name__ == "__main__":
    main()
