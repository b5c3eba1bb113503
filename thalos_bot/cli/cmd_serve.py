"""``thalos-bot chat`` (this terminal) and ``thalos-bot run`` (the daemon)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Protocol, TypeVar, runtime_checkable

import anyio
import structlog

from thalos_bot import __version__
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.cli.chat_intro import banner, resume_line
from thalos_bot.config.loader import (
    ConfigError,
    LoadedConfig,
    load_settings,
    postgres_not_supported,
)
from thalos_bot.config.models import build_catalog
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.service.host import Host, open_host
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.service.sd_notify import Notifier
from thalos_bot.skills.sync import SkillSyncError
from thalos_bot.storage.database import Database, DatabaseError
from thalos_bot.storage.private import open_private_append
from thalos_bot.storage.sqlite_conversations import SqliteConversationMap
from thalos_bot.telemetry.logging import configure_logging
from thalos_bot.telemetry.otel import setup_telemetry

log = structlog.get_logger(__name__)

E = TypeVar("E", bound=BaseException)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2


@runtime_checkable
class CountsFailures(Protocol):
    """An adapter that counts the turns it showed as failed (the console does)."""

    @property
    def failed_turns(self) -> int: ...


LOG_FILE = "chat.log"
"""The state folder's log file: where the log goes whenever the console channel owns
this terminal (``chat``, or ``run`` with the console enabled in a terminal)."""


def run_chat(args: argparse.Namespace) -> int:
    """Exit codes: 0 when every turn completed (or was cancelled), 1 when any turn
    failed (e.g. no API key), 2 for a configuration error, 130 on Ctrl-C at start."""
    offline: bool = getattr(args, "offline", False)
    loaded = load_settings(args.config)
    _refuse_unsupported_store(loaded)
    if offline:
        loaded = _offline(loaded)
    log_file = loaded.state_dir / LOG_FILE
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    with open_private_append(log_file) as stream:
        configure_logging(loaded.settings.logging.level, "json", stream)
        if interactive:
            print(banner(loaded, log_file, offline=offline), flush=True)
            resume = anyio.run(_resume_line, loaded)
            if resume is not None:
                print(resume, flush=True)
        return _serve(loaded, channels=["console"])


def _offline(loaded: LoadedConfig) -> LoadedConfig:
    """The same configuration with the scripted model: no key, no network."""
    settings = loaded.settings
    provider = settings.provider.model_copy(update={"kind": "scripted"})
    return replace(loaded, settings=settings.model_copy(update={"provider": provider}))


def run_daemon(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
    _refuse_unsupported_store(loaded)
    logging = loaded.settings.logging
    under_systemd = "INVOCATION_ID" in os.environ or "JOURNAL_STREAM" in os.environ
    if not under_systemd and _console_owns_terminal(loaded):
        log_file = loaded.state_dir / LOG_FILE
        with open_private_append(log_file) as file:
            configure_logging(logging.level, "json", file)
            print(f"thalos-bot {__version__}: logs go to {log_file}", file=sys.stderr, flush=True)
            return _serve(loaded, channels=None)
    stream = sys.stdout if under_systemd else sys.stderr
    configure_logging(logging.level, "json" if under_systemd else logging.format, stream)
    return _serve(loaded, channels=None)


def _refuse_unsupported_store(loaded: LoadedConfig) -> None:
    """Raise :class:`ConfigError` before anything opens when ``[storage] url`` selects a
    database not every port of the daemon has a store for (PostgreSQL, for now)."""
    if loaded.settings.storage.target.kind == "postgresql":
        raise ConfigError([postgres_not_supported(loaded.label)])


def _console_owns_terminal(loaded: LoadedConfig) -> bool:
    """The console channel is enabled and this is a terminal: log lines would land in
    its prompt."""
    enabled = "console" in loaded.settings.enabled_channels()
    return enabled and sys.stdin.isatty() and sys.stdout.isatty()


def _serve(loaded: LoadedConfig, channels: list[str] | None) -> int:
    telemetry = setup_telemetry(loaded.settings.telemetry)
    try:
        return anyio.run(_main, loaded, channels)
    except (DatabaseError, SkillSyncError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except BaseExceptionGroup as group:
        fatal = _find(group, ChannelFatalError)
        if fatal is not None:
            print(f"error: {fatal.message}", file=sys.stderr)
            return fatal.exit_code
        config = _find(group, ConfigError)
        if config is not None:
            for problem in config.problems:
                print(f"error: {problem}", file=sys.stderr)
            return EXIT_CONFIG
        raise
    except ChannelFatalError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    finally:
        telemetry.shutdown()


async def _main(loaded: LoadedConfig, channels: list[str] | None) -> int:
    notifier = Notifier.from_environment()
    async with (
        open_host(loaded, channels=channels, on_tick=notifier.watchdog) as host,
        anyio.create_task_group() as group,
    ):
        # In `chat`, Ctrl-C belongs to the console (it cancels an answer or quits at the
        # prompt), so only the daemon listens for SIGINT as a stop request.
        stop_signals = [signal.SIGTERM, signal.SIGHUP]
        if channels is None:
            stop_signals.append(signal.SIGINT)
        group.start_soon(_stop_on_signals, host.pump, notifier, stop_signals)
        group.start_soon(_announce_ready, host, notifier)
        await host.pump.run(host.sources)
        group.cancel_scope.cancel()
    notifier.stopping()
    if channels is not None and _failed_turns(host) > 0:
        return EXIT_FAILURE
    return EXIT_OK


async def _resume_line(loaded: LoadedConfig) -> str | None:
    """Read before the prompt appears; a database that cannot open is reported by the
    host a moment later, so here it only means there is nothing to continue."""
    if not loaded.database_path.exists():
        return None
    try:
        async with await Database.open(loaded.database_path, migrations=ALL_MIGRATIONS) as db:
            return await resume_line(
                SqliteConversationMap(db),
                build_catalog(loaded.settings),
                loaded.settings.pump.idle_timeout,
            )
    except DatabaseError:
        return None


def _failed_turns(host: Host) -> int:
    """Turns that failed on channels that count them (the console does)."""
    return sum(
        pair.adapter.failed_turns
        for pair in host.channels
        if isinstance(pair.adapter, CountsFailures)
    )


async def _announce_ready(host: Host, notifier: Notifier) -> None:
    """READY=1 once every channel receives (the database is open by now)."""
    for pair in host.channels:
        await pair.receiving.wait()
    names = ", ".join(pair.describe for pair in host.channels)
    log.info("ready", channels=[pair.describe for pair in host.channels])
    notifier.ready(f"serving: {names}")


async def _stop_on_signals(
    pump: ChannelPump, notifier: Notifier, stop_signals: list[signal.Signals]
) -> None:
    with anyio.open_signal_receiver(*stop_signals) as signals:
        async for signum in signals:
            log.info("signal_received", signal=signal.Signals(signum).name)
            notifier.stopping(f"stopping: {pump.running_turns} answers still running")
            pump.stop()


def _find(group: BaseExceptionGroup[BaseException], kind: type[E]) -> E | None:
    for exc in _leaves(group):
        if isinstance(exc, kind):
            return exc
    return None


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
