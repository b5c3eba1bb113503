"""Slack answers over the Slack fake: calls per answer and latency, native streaming
(a thread) against edits (a DM) against the final only.

    python bench/slack_streaming.py [--answers 5] [--chars 2000] [--pace 0.005]

The real plug-in, slack-bolt and slack-sdk talk to the fake over loopback; the model
streams ``--chars`` characters in 20-character deltas, one every ``--pace`` seconds.
Printed per mode: Web API calls per answer (by method), the time from the person's
message to the first visible text, and to the final text shown.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # bench/telegram.py
sys.path.insert(0, str(HERE.parent))

from tests.fakes.slack_api import SlackFake  # noqa: E402
from tests.slack.harness import CHANNEL, SCALE, USER, running_bot, tokens  # noqa: E402
from thalos_bot.providers.scripted import Say, ScriptedProvider  # noqa: E402
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV  # noqa: E402
from thalos_bot_slack.plugin import TIER_SCALE_ENV  # noqa: E402


async def one_mode(mode: str, answers: int, chars: int, pace: float) -> None:
    text = ("lorem ipsum dolor sit amet " * (chars // 27 + 1))[:chars].strip()
    deltas = [text[i : i + 20] for i in range(0, len(text), 20)]
    bot_token, app_token = tokens()
    with SlackFake(bot_token, app_token, scale=SCALE) as fake, tempfile.TemporaryDirectory() as d:
        os.environ.update({APP_TOKEN_ENV: app_token, BOT_TOKEN_ENV: bot_token})
        os.environ[TIER_SCALE_ENV] = str(SCALE)
        provider = ScriptedProvider([[Say(*deltas, delay=pace)]] * answers)
        streaming = "off" if mode == "final only" else "auto"
        first: list[float] = []
        final: list[float] = []
        async with running_bot(fake, provider, tmp_path=Path(d), streaming=streaming) as bot:
            for n in range(answers):
                before = 0
                if mode == "native (thread)":
                    where = CHANNEL
                    started = time.perf_counter()
                    thread = bot.say(f"<@{fake.workspace.bot_user}> go {n}", channel=CHANNEL)
                else:
                    where, thread = fake.dm(USER), None
                    before = len(fake.texts(where))
                    started = time.perf_counter()
                    bot.say(f"go {n}")

                def shown(
                    where: str = where, thread: str | None = thread, before: int = before
                ) -> list[str]:
                    texts = fake.texts(where, thread_ts=thread)
                    return texts[-1:] if thread else texts[before:]

                await fake.wait_for(lambda: shown() and shown()[0].strip())
                first.append(time.perf_counter() - started)
                await fake.wait_for(lambda: shown() == [text])
                final.append(time.perf_counter() - started)
        calls = Counter(c.method for c in fake.web.calls if c.error is None)
        wanted = ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream")
        per = ", ".join(f"{m} {calls[m] / answers:.1f}" for m in (*wanted, "chat.stopStream"))
        print(
            f"{mode:16s} calls/answer: {per}; first text {1000 * sum(first) / answers:.0f} ms, "
            f"final {1000 * sum(final) / answers:.0f} ms (mean of {answers})"
        )


async def main(args: argparse.Namespace) -> None:
    for mode in ("native (thread)", "edit (DM)", "final only"):
        await one_mode(mode, args.answers, args.chars, args.pace)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answers", type=int, default=5)
    parser.add_argument("--chars", type=int, default=2000)
    parser.add_argument("--pace", type=float, default=0.005)
    anyio.run(main, parser.parse_args())
