"""Sends in doubt while many private chats talk to the bot at once, as Telegram numbers
their messages (one counter for the whole bot account).

    python bench/telegram_account_ids.py [--chats 10] [--rounds 5] [--doubts 4]
                                         [--request-timeout 0.5] [--poll-timeout 30]

The daemon's host (SQLite, runtime, pump, the real python-telegram-bot) polls the
Telegram fake with the scripted provider (it echoes). Each round, every chat's user
writes at once and ``--doubts`` of the answers are put in doubt (posted then the
connection closed, posted then a 502, or dropped before processing), each while a
stranger writes elsewhere, so that other chats' messages take the ids around the one in
doubt. Printed: answers lost and duplicated (both must be 0), checks made, probes per
check (p50/max), long polls cut short (a catch-up, so that no update in flight is
missed: the fake ends the cut one with 409 when the next arrives) and the time from a
faulted send to its verdict (p50/max; it includes the client's timeout).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import statistics
import sys
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# bench/telegram.py would shadow python-telegram-bot's package; the fakes live with the
# tests, at the root.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

import anyio  # noqa: E402
from structlog.testing import capture_logs  # noqa: E402

from thalos_bot.config.loader import LoadedConfig  # noqa: E402
from thalos_bot.config.models import Settings  # noqa: E402
from thalos_bot.service.host import open_host  # noqa: E402
from thalos_bot.telemetry.logging import configure_logging  # noqa: E402

TOKEN = "123456:BENCH-" + secrets.token_hex(16)
STRANGER = 99


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.fakes.telegram_api import TelegramFake

    chats = list(range(7001, 7001 + args.chats))
    lost = duplicated = 0
    with (
        TelegramFake(TOKEN, per_chat_interval=0, global_per_second=0) as fake,
        tempfile.TemporaryDirectory() as state,
        capture_logs() as logs,
    ):
        settings = Settings.model_validate(
            {
                "provider": {"kind": "scripted"},
                "pump": {"flush_interval": 0.05},
                "logging": {"level": "warning"},
                "channels": {
                    "telegram": {
                        "enabled": True,
                        "allowed_user_ids": chats,
                        "base_url": fake.base_url,
                        "streaming": "off",
                        "poll_timeout": args.poll_timeout,
                        "request_timeout": args.request_timeout,
                        "chat_min_interval": 0.05,
                        "backoff_initial": 0.05,
                        "backoff_max": 0.5,
                    }
                },
            }
        )
        async with (
            open_host(LoadedConfig(settings, None, Path(state))) as host,
            anyio.create_task_group() as group,
        ):
            group.start_soon(host.pump.run, host.sources)
            await fake.wait_for(lambda: fake.polling, 10)
            for round_ in range(args.rounds):
                others = {STRANGER: f"a stranger, round {round_}"}
                kinds = ["close", "502", "drop"]
                for n in range(args.doubts):
                    kind = kinds[n % len(kinds)]
                    if kind == "close":
                        fake.timeout_next("sendMessage", close=True, others_say=others)
                    elif kind == "502":
                        fake.fail_next("sendMessage", 502, applied=True, others_say=others)
                    else:
                        fake.drop_next("sendMessage", others_say=others)
                for chat in chats:
                    fake.push_text(chat, chat, f"round {round_} from {chat}")
                expected = {chat: f"You said: round {round_} from {chat}" for chat in chats}

                def answered(expected: dict[int, str] = expected) -> bool:
                    return all(text in fake.texts(chat) for chat, text in expected.items())

                with anyio.move_on_after(60):
                    await fake.wait_for(answered, 60)
                    while not _settled(logs):  # noqa: ASYNC110 - a bench may poll the logs
                        await anyio.sleep(0.05)
                for chat, text in expected.items():
                    count = fake.texts(chat).count(text)
                    lost += count == 0
                    duplicated += count > 1
            host.pump.stop()
    return _figures(logs, fake, lost, duplicated, args)


def _settled(logs: list[MutableMapping[str, Any]]) -> bool:
    """Every send put in doubt has had its verdict."""
    events = [e["event"] for e in logs]
    ended = sum(
        events.count(name) for name in ("telegram_send_checked", "telegram_send_unresolved")
    )
    return ended >= events.count("telegram_send_uncertain")


def _verdict_times(fake: Any) -> list[float]:
    """For each faulted send: seconds until the check found it (a probe answered "not
    modified") or the message was sent again."""
    times = []
    for faulted in [c for c in fake.calls("sendMessage") if c.fault is not None]:
        later = [
            c
            for c in fake.calls(chat_id=faulted.chat_id)
            if c.at > faulted.at
            and (
                (c.method == "sendMessage" and c.fault is None)
                or (c.method == "editMessageText" and "not modified" in str(c.response))
            )
        ]
        if later:
            times.append(later[0].at - faulted.at)
    return times


def _figures(
    logs: list[MutableMapping[str, Any]],
    fake: Any,
    lost: int,
    duplicated: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    checked = [e for e in logs if e["event"] == "telegram_send_checked"]
    probes = [int(e["probes"]) for e in checked]
    times = _verdict_times(fake)
    return {
        "answers": args.chats * args.rounds,
        "lost": lost,
        "duplicated": duplicated,
        "doubts": sum(1 for e in logs if e["event"] == "telegram_send_uncertain"),
        "checks": len(checked),
        "arrived": sum(1 for e in checked if e["arrived"]),
        "gave_up": sum(1 for e in logs if e["event"] == "telegram_send_unresolved"),
        "probes_p50": statistics.median(probes) if probes else 0,
        "probes_max": max(probes, default=0),
        "probe_calls": len(fake.calls("editMessageText")),
        "fault_to_verdict_p50_s": round(statistics.median(times), 3) if times else None,
        "fault_to_verdict_max_s": round(max(times), 3) if times else None,
        "long_polls_cut": sum(1 for c in fake.calls("getUpdates") if c.status == 409),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--doubts", type=int, default=4)
    parser.add_argument("--request-timeout", type=float, default=0.5)
    parser.add_argument("--poll-timeout", type=float, default=30)
    args = parser.parse_args()
    os.environ.setdefault("PTB_TIMEDELTA", "true")
    os.environ["TELEGRAM_BOT_TOKEN"] = TOKEN
    configure_logging("warning", "pretty", sys.stderr)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    figures = anyio.run(run, args)
    for key, value in figures.items():
        print(f"{key:>22}: {value}")


if __name__ == "__main__":
    main()
