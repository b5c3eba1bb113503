"""A schedule whose chat the channel no longer allows (the person removed from
``allowed_user_ids``, the group from ``groups``) is not run and not delivered: it is
logged at start and at each run it would have had, and the schedule stays."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest
from structlog.testing import capture_logs

from tests.daemon_config import telegram_daemon_config
from tests.fakes.telegram_api import TelegramFake
from tests.schedules.conftest import ManualClock, RecordingDelivery, open_db
from tests.subagents.conftest import ALICE, CATALOG
from thalos_bot.channels.registry import ChannelAllowlists, allowlists, discover
from thalos_bot.config.loader import load_settings
from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.schedules.scheduler import Scheduler
from thalos_bot.schedules.store import NewSchedule, ScheduleStore
from thalos_bot.service.host import open_host
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.subagents.runner import SubagentRunner
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.manifest import manifest as telegram_plugin

pytestmark = pytest.mark.anyio

BERLIN = ZoneInfo("Europe/Berlin")
USER, GONE = 4242, 7777
GROUP, OLD_GROUP = -1001, -1002
OWNER = SecurityContext.of("owner")


def daily(to: str, task: str) -> NewSchedule:
    return NewSchedule(
        ALICE, "researcher", task, Address.parse(to), cron="0 9 * * *", timezone="Europe/Berlin"
    )


def topic(chat: int) -> Address:
    return Address(ChannelId("telegram"), ConversationId(f"{chat}:12"))


def telegram_allowlists() -> ChannelAllowlists:
    config = TelegramConfig(enabled=True, allowed_user_ids=[USER], groups=[GROUP])
    return ChannelAllowlists({"telegram": telegram_plugin.allowlist(config)})


def test_the_telegram_allowlist_names_what_is_no_longer_allowed() -> None:
    allowed = telegram_allowlists()
    assert allowed.refusal(Address.parse(f"telegram:{USER}")) is None
    assert allowed.refusal(Address.parse(f"telegram:{GROUP}")) is None
    assert allowed.refusal(topic(GROUP)) is None  # made by the tool in a forum topic
    assert allowed.refusal(Address.parse(f"telegram:{GONE}")) == (
        f"user {GONE} is not in allowed_user_ids"
    )
    assert allowed.refusal(Address.parse(f"telegram:{OLD_GROUP}")) == (
        f"group {OLD_GROUP} is not in groups"
    )
    assert allowed.refusal(topic(OLD_GROUP)) == (f"group {OLD_GROUP} is not in groups")
    assert allowed.refusal(Address.parse("console")) is None  # no allowlist: the terminal


def test_the_installed_telegram_plugin_offers_its_allowlist() -> None:
    plugins = discover()
    config = TelegramConfig(enabled=True, allowed_user_ids=[USER])
    allowed = allowlists(plugins, {"telegram": config})
    assert allowed.refusal(Address.parse(f"telegram:{GONE}")) is not None
    assert allowed.refusal(Address.parse(f"telegram:{USER}")) is None


async def test_a_run_to_a_chat_no_longer_allowed_is_skipped_and_logged(db: Database) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=BERLIN))
    store = ScheduleStore(db)
    kept = await store.create(daily(f"telegram:{USER}", "For the user."), clock())
    gone = await store.create(daily(f"telegram:{GONE}", "For the removed user."), clock())
    old = await store.create(daily(f"telegram:{OLD_GROUP}", "For the old group."), clock())
    provider = ScriptedProvider()
    delivery = RecordingDelivery()
    async with Runtime(
        catalog=CATALOG,
        store=SqliteSessionStore(db),
        provider=provider,
        settings=RuntimeSettings(model="m"),
    ) as runtime:
        scheduler = Scheduler(
            store, SubagentRunner(runtime), delivery, clock=clock, allowlist=telegram_allowlists()
        )
        with capture_logs() as logs:
            at_start = await scheduler.report_not_allowed()
        assert {s.id for s in at_start} == {gone.id, old.id}
        assert {(e["schedule"], e["reason"]) for e in logs} == {
            (gone.id, f"user {GONE} is not in allowed_user_ids"),
            (old.id, f"group {OLD_GROUP} is not in groups"),
        }
        assert {e["event"] for e in logs} == {"schedule_chat_not_allowed"}
        clock.now = datetime(2026, 6, 1, 9, 0, tzinfo=BERLIN)
        with capture_logs() as logs:
            async with anyio.create_task_group() as runs:
                started = await scheduler.start_due(runs)
    assert [s.id for s in started] == [kept.id]
    assert [(d.conversation_id, d.text) for d in delivery.sent] == [
        (str(USER), "You said: For the user.")
    ]
    assert len(provider.requests) == 1  # no model call for a skipped run
    skipped = [e for e in logs if e["event"] == "schedule_skipped"]
    assert {(e["schedule"], e["deliver_to"]) for e in skipped} == {
        (gone.id, f"telegram:{GONE}"),
        (old.id, f"telegram:{OLD_GROUP}"),
    }
    assert all(e["log_level"] == "warning" and e["reason"] for e in skipped)
    row = await store.get(gone.id)
    assert row is not None
    assert row.state == "active"  # it runs again once the chat is allowed again
    assert row.next_run == datetime(2026, 6, 2, 9, 0, tzinfo=BERLIN)


async def test_the_daemon_does_not_deliver_to_a_user_removed_from_the_allowlist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "123456:TEST-" + secrets.token_hex(16)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", token)
    with TelegramFake(token, per_chat_interval=0.05, burst=3) as telegram:
        telegram.add_chat(USER)
        telegram.add_chat(GONE)  # once allowed: the chat exists and accepts messages
        path = tmp_path / "bot.toml"
        path.write_text(telegram_daemon_config(telegram.base_url, USER), encoding="utf-8")
        loaded = load_settings(path)
        # Both made while GONE was still allowed, and both due when the daemon starts.
        made = datetime.now(UTC) - timedelta(hours=1)
        db = await open_db(loaded.database_path)
        try:
            store = ScheduleStore(db)
            for to, task in ((GONE, "For the removed user."), (USER, "For the user.")):
                await store.create(
                    NewSchedule(
                        OWNER,  # the section's principal: the schedules' person is known
                        "assistant",
                        task,
                        Address.parse(f"telegram:{to}"),
                        at=made + timedelta(minutes=1),
                    ),
                    made,
                )
        finally:
            await db.aclose()
        with capture_logs() as logs:
            async with (
                open_host(loaded, channels=["telegram"]) as host,
                anyio.create_task_group() as group,
            ):
                group.start_soon(host.pump.run, host.sources)
                done = await telegram.wait_for(lambda: telegram.texts(USER) or None, 20)
                host.pump.stop()
        assert done == ["You said: For the user."]
        assert telegram.calls("sendMessage", GONE) == []
        assert telegram.texts(GONE) == []
    events = [e["event"] for e in logs if e.get("deliver_to") == f"telegram:{GONE}"]
    assert events == ["schedule_chat_not_allowed", "schedule_skipped"]
