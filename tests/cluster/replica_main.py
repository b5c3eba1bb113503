"""One replica as its own process, for the fault tests (kill -9, SIGSTOP, SIGTERM).

``python -m tests.cluster.replica_main FAKE_URL PG_URL PORT LEASE_S DELAY_S`` runs the
real Telegram plugin in webhook mode, the pump and the runtime over the shared
PostgreSQL stores (sessions with the lease fence, conversation bindings), answering with
the scripted echo provider (one word per ``DELAY_S``). It prints ``ready`` once it takes
deliveries, and shuts down gracefully on SIGTERM. It stands in for ``thalos-bot run``
until every port of the daemon has a PostgreSQL store.
"""

from __future__ import annotations

import os
import signal
import sys
from functools import partial
from pathlib import Path

import anyio

from tests.telegram.catalog import CATALOG
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.cluster.leases import FenceSlot
from thalos_bot.config.models import PumpSettings, Settings
from thalos_bot.config.storage import StorageSettings
from thalos_bot.providers.scripted import ScriptedProvider, echo_reply
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.pg.conversations import PgConversationMap
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.telemetry.logging import configure_logging
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.manifest import manifest as plugin

ALLOWED_ENV = "THALOS_CLUSTER_ALLOWED"
"""Comma-separated user ids the replica serves (the benches talk in more chats)."""


def allowed_users() -> list[int]:
    return [int(u) for u in os.environ.get(ALLOWED_ENV, "4242,4343,4444,4545,4646").split(",")]


async def main(fake_url: str, pg_url: str, port: int, lease: float, delay: float) -> None:
    config = TelegramConfig.model_validate(
        {
            "enabled": True,
            "allowed_user_ids": allowed_users(),
            "base_url": fake_url,
            "streaming": "edit",
            "chat_min_interval": 0.05,
            "request_timeout": 5,
            "mode": "webhook",
            "webhook_url": "https://bot.example.com/telegram",
            "webhook_listen": f"127.0.0.1:{port}",
            "lease_seconds": lease,
        }
    )
    settings = Settings(storage=StorageSettings(url=pg_url))
    fence = FenceSlot()
    host = ChannelHost.of(settings, CATALOG, Path(), fence=fence)
    async with await PgDatabase.open(pg_url, pool_size=4) as db:
        store = PgSessionStore(db, fence=fence)
        provider = ScriptedProvider(default=partial(echo_reply, delay=delay))
        async with (
            Runtime(
                catalog=CATALOG, store=store, provider=provider, settings=RuntimeSettings(model="m")
            ) as runtime,
            plugin.open(config, host) as pair,
        ):
            assert fence.book is not None, "the channel holds the leases the store checks"
            pump = ChannelPump(
                runtime=runtime,
                catalog=CATALOG,
                conversations=PgConversationMap(db),
                adapters={pair.adapter.channel_id: pair.adapter},
                settings=PumpSettings(flush_interval=0.1, shutdown_grace=10),
            )
            async with anyio.create_task_group() as group:
                group.start_soon(pump.run, [pair.source])
                print("ready", flush=True)
                with anyio.open_signal_receiver(signal.SIGTERM) as signals:
                    async for _ in signals:
                        pump.stop()
                        break


if __name__ == "__main__":
    configure_logging("info", "json", sys.stderr)
    fake, pg, port, lease, delay = sys.argv[1:6]
    anyio.run(main, fake, pg, int(port), float(lease), float(delay))
