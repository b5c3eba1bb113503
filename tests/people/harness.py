"""The daemon the people tests talk to: built from a ``bot.toml`` over the Anthropic
fake (and the transports' fakes), with its pump running."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from structlog.processors import TimeStamper
from structlog.testing import capture_logs

from tests.daemon_config import anthropic_provider
from tests.fakes.anthropic_api import AnthropicFake
from tests.fakes.discord_api import DiscordFake
from tests.fakes.telegram_api import TelegramFake
from thalos_bot.config.loader import load_settings
from thalos_bot.service.host import Host, open_host
from thalos_bot.storage.pg.database import PgDatabase

T = TypeVar("T")
LogEvents = list[MutableMapping[str, Any]]

TELEGRAM_TOKEN = "424242:TEST-people"


def head(anthropic_url: str, storage: str = "") -> str:
    """The top of the file: the state folder, the model, the console off (and
    ``storage``, the ``[storage]`` section, when given)."""
    return f"""
state_dir = "state"
{storage}
[provider]
{anthropic_provider(anthropic_url)}
[pump]
flush_interval = "0.1s"
[channels.console]
enabled = false
"""


@asynccontextmanager
async def daemon(tmp_path: Path, config: str, channels: Sequence[str]) -> AsyncIterator[Host]:
    """The daemon of ``config`` (written to ``tmp_path/bot.toml``), its ``channels``
    open and its pump running, until the block ends."""
    (tmp_path / "bot.toml").write_text(config, encoding="utf-8")
    loaded = load_settings(tmp_path / "bot.toml")
    async with (
        open_host(loaded, channels=list(channels)) as host,
        anyio.create_task_group() as group,
    ):
        group.start_soon(host.pump.run, host.sources)
        try:
            yield host
        finally:
            host.pump.stop()


def telegram_section(url: str, users: Sequence[int], extra: str = "") -> str:
    """``[channels.telegram]`` over the fake at ``url``, ``users`` allowed."""
    allowed = ", ".join(str(user) for user in users)
    return f"""
[channels.telegram]
enabled = true
base_url = "{url}"
allowed_user_ids = [{allowed}]
poll_timeout = 1
{extra}"""


def discord_section(base_url: str, gateway_url: str, users: Sequence[int]) -> str:
    """``[channels.discord]`` over the fake, ``users`` allowed."""
    allowed = ", ".join(str(user) for user in users)
    return f"""
[channels.discord]
enabled = true
allowed_users = [{allowed}]
base_url = "{base_url}"
gateway_url = "{gateway_url}"
guild_ready_timeout = 0.05
"""


@dataclass
class Fakes:
    telegram: TelegramFake
    discord: DiscordFake
    anthropic: AnthropicFake


@contextmanager
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fakes]:
    """Telegram's, Discord's and Anthropic's fakes, their tokens in the environment as
    the daemon reads them."""
    from thalos_bot_discord import TOKEN_ENV

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN)
    with (
        TelegramFake(TELEGRAM_TOKEN, per_chat_interval=0.05, burst=3) as telegram,
        DiscordFake() as discord,
        AnthropicFake() as anthropic,
    ):
        monkeypatch.setenv(TOKEN_ENV, discord.token)
        yield Fakes(telegram, discord, anthropic)


@contextmanager
def daemon_log() -> Iterator[LogEvents]:
    """The daemon's log events while the block lasts, whatever logging was configured
    before (an earlier test may have raised the level past ``info``)."""
    stamp = TimeStamper(fmt="%H:%M:%S.%f", key="at")
    with capture_logs(processors=[stamp]) as events:
        yield events


async def explained(wait: Awaitable[T], *states: Callable[[], str]) -> T:
    """``wait``'s result; when it times out, an AssertionError that says ``states``
    (what each fake received, what the daemon was doing), so a flake names its cause."""
    try:
        return await wait
    except (TimeoutError, AssertionError) as exc:  # the Discord fake's wait_for: the latter
        raise AssertionError(f"{exc}; then:\n" + "\n".join(s() for s in states)) from exc


def telegram_state(telegram: TelegramFake, chat: int) -> Callable[[], str]:
    """What the Telegram fake holds: the bot's messages in ``chat``, the updates not yet
    fetched, and its last API calls (method, status, any fault)."""

    def said() -> str:
        calls = ", ".join(
            f"{c.method} {c.status}{' ' + c.fault if c.fault else ''}"
            for c in telegram.calls()[-15:]
        )
        return (
            f"telegram: bot's messages in {chat}: {telegram.texts(chat)!r}; updates not"
            f" fetched: {telegram.pending_update_count} (a getUpdates waiting:"
            f" {telegram.polling}); last calls: {calls}"
        )

    return said


def host_state(host: Host, events: LogEvents, last: int = 40) -> Callable[[], str]:
    """The daemon: turns running, PostgreSQL connections borrowed, its last log events."""

    def said() -> str:
        shared = host.stores.shared
        borrowed = shared.connections_in_use if isinstance(shared, PgDatabase) else "-"
        running = host.pump.running_turns
        lines = [f"daemon: turns running {running}, pg connections in use {borrowed}; log:"]
        for event in events[-last:]:
            rest = " ".join(f"{k}={v!r}" for k, v in event.items() if k not in ("event", "at"))
            lines.append(f"  {event.get('at')} {event.get('event')} {rest}")
        return "\n".join(lines)

    return said
