"""``thalos-bot chat`` (this terminal) and ``thalos-bot run`` (the daemon)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import anyio
import structlog

from thalos_bot import __version__
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.config.loader import ConfigError, LoadedConfig, load_settings
from thalos_bot.providers.factory import API_KEY_ENV
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.service.host import Host, open_host
from thalos_bot.service.sd_notify import Notifier
from thalos_bot.skills.sync import SkillSyncError
from thalos_bot.storage.database import DatabaseError
from thalos_bot.storage.private import open_private_append
from thalos_bot.telemetry.logging import configure_logging
from thalos_bot.telemetry.otel import setup_telemetry

log = structlog.get_logger(__name__)

E = TypeVar("E", bound=BaseException)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2


LOG_FILE = "chat.log"
"""The state folder's log file: where the log goes whenever the console channel owns
this terminal (``chat``, or ``run`` with the console enabled in a terminal)."""


def run_chat(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
    log_file = loaded.state_dir / LOG_FILE
    with open_private_append(log_file) as stream:
        configure_logging(loaded.settings.logging.level, "json", stream)
        if sys.stdin.isatty() and sys.stdout.isatty():
            _banner(loaded, log_file)
        return _serve(loaded, channels=["console"])


def run_daemon(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
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
    return EXIT_OK


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


def _banner(loaded: LoadedConfig, log_file: Path) -> None:
    settings = loaded.settings
    default = next(a for a in settings.agents if a.id == settings.default_agent_id)
    lines = [
        (
            f"thalos-bot {__version__} — talking to {default.name}. "
            "Type /help for commands; Ctrl-C stops an answer; Ctrl-D quits."
        ),
    ]
    if settings.provider.kind == "anthropic" and not os.environ.get(API_KEY_ENV):
        lines.append(
            f"Note: {API_KEY_ENV} is not set. Commands work, but the agent cannot answer "
            "until you set it."
        )
    lines.append(f"Logs: {log_file}")
    print("\n".join(lines), flush=True)


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
