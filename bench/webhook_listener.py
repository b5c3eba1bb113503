"""Telegram's webhook listener alone, for ``bench/listener_load.py --listener telegram``:
the real listener (secret check, decoding, the kit's bounded uvicorn and rate limit)
in a process of its own, its store kept in memory so that the figures are the
listener's, not PostgreSQL's.

    .venv/bin/python bench/webhook_listener.py PORT HEADER_TIMEOUT CAP RATE BURST
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # not bench/: its telegram.py would shadow the library
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import anyio

from thalos_bot.cluster.inbox import Inbox
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.webhook import lane_of
from thalos_bot_telegram.webhook_intake import Listener, serving

SECRET = "bench-secret_0123456789"
USER = 4242


class MemoryInbox(Inbox):
    """The inbox's contract (True when new, once per update id) without a database."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    async def put(self, update_id: int, lane: str, payload: Mapping[str, Any]) -> bool:
        new = update_id not in self.seen
        self.seen.add(update_id)
        return new


def update(update_id: int) -> dict[str, object]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1_700_000_000,
            "chat": {"id": USER, "type": "private", "first_name": "B"},
            "from": {"id": USER, "is_bot": False, "first_name": "B"},
            "text": "hello",
        },
    }


async def serve(port: int, bounds: TelegramConfig) -> None:
    listener = Listener(MemoryInbox(), SECRET, lane_of(frozenset({USER})))
    async with serving(listener, f"127.0.0.1:{port}", bounds):
        await anyio.sleep_forever()


def main() -> None:
    port, header_timeout, cap, rate, burst = sys.argv[1:6]
    bounds = TelegramConfig(
        webhook_header_timeout=float(header_timeout),
        webhook_max_connections=min(40, int(cap) - 1),  # the config keeps room above it
        webhook_connection_cap=int(cap),
        webhook_rate_limit=int(rate),
        webhook_rate_burst=int(burst),
    )
    anyio.run(serve, int(port), bounds)


if __name__ == "__main__":
    main()
