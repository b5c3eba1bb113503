"""``thalos-bot chat`` (this terminal) and ``thalos-bot run`` (the daemon)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Protocol, TextIO, runtime_checkable

import anyio
import structlog

from thalos_bot import __version__
from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError
from thalos_bot.cli.chat_intro import banner, resume_line
from thalos_bot.config.limits import PriceSettings
from thalos_bot.config.loader import (
    ConfigError,
    LoadedConfig,
    load_settings,
)
from thalos_bot.config.models import build_catalog
from thalos_bot.domain.wrapped import found_in
from thalos_bot.providers.factory import API_KEY_ENV
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.service.heap import settle_heap
from thalos_bot.service.host import Host, open_host
from thalos_bot.service.provider_checks import provider_env, uses_default
from thalos_bot.service.schema import ALL_MIGRATIONS, PG_ALL_MIGRATIONS
from thalos_bot.service.sd_notify import Notifier
from thalos_bot.service.status import StatusFile
from thalos_bot.skills.sync import SkillSyncError
from thalos_bot.storage.database import Database, DatabaseError
from thalos_bot.storage.pg.conversations import PgConversationMap
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.private import open_private_append
from thalos_bot.storage.sqlite_conversations import SqliteConversationMap
from thalos_bot.telemetry.logging import configure_logging
from thalos_bot.telemetry.otel import setup_telemetry

log = structlog.get_logger(__name__)


EXIT_OK = 0
EXIT_FAILURE = 1


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
    if offline:
        loaded = _offline(loaded)
    log_file = loaded.state_dir / LOG_FILE
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    with _open_log(loaded, log_file) as stream:
        configure_logging(loaded.settings.logging.level, "json", stream)
        if interactive:
            print(banner(loaded, log_file, offline=offline), flush=True)
            resume = anyio.run(_resume_line, loaded)
            if resume is not None:
                print(resume, flush=True)
        return _serve(loaded, channels=["console"])


OFFLINE_DIR = "offline"
"""The state folder's sub-folder ``chat --offline`` keeps its own sessions in."""
OFFLINE_MODEL = "scripted-echo"


def _offline(loaded: LoadedConfig) -> LoadedConfig:
    """The same configuration with the scripted model: no key, no network.

    It keeps its own database (``<state_dir>/offline``), so an echo session never
    continues the conversation held with the real model, nor counts in its day's
    spending; and every model is priced at nothing, so /status shows no cost."""
    settings = loaded.settings
    provider = settings.provider.model_copy(update={"kind": "scripted", "model": OFFLINE_MODEL})
    providers = [
        entry.model_copy(update={"kind": "scripted", "model": OFFLINE_MODEL})
        for entry in settings.providers
    ]
    agents = [agent.model_copy(update={"model": None}) for agent in settings.agents]
    free = PriceSettings(input=0, output=0, cache_read=0, cache_write=0)
    limits = settings.limits.model_copy(update={"prices": {OFFLINE_MODEL: free}})
    update = {"provider": provider, "providers": providers, "agents": agents, "limits": limits}
    return replace(
        loaded,
        settings=settings.model_copy(update=update),
        state_dir=loaded.state_dir / OFFLINE_DIR,
    )


def _open_log(loaded: LoadedConfig, log_file: Path) -> TextIO:
    """The state folder's log file, opened to append; a folder the bot cannot write is
    a configuration problem (exit 2), said in one line, not a traceback."""
    try:
        return open_private_append(log_file)
    except OSError as exc:
        raise ConfigError([state_dir_problem(loaded, exc)]) from None


def state_dir_problem(loaded: LoadedConfig, exc: OSError) -> str:
    """One line for a state folder the bot cannot use, with what to do about it."""
    reason = exc.strerror or type(exc).__name__
    where = exc.filename or loaded.state_dir
    return (
        f"state folder {loaded.state_dir}: cannot write {where} ({reason}); make it "
        "writable by this user (thalos-bot doctor --fix mends modes), or point state_dir "
        "or $THALOS_BOT_STATE_DIR at a folder that is"
    )


def _in_state_dir(loaded: LoadedConfig, exc: OSError) -> bool:
    """``exc`` is about a file in the state folder (the console's history, say)."""
    if not isinstance(exc.filename, str | Path):
        return False
    return Path(exc.filename).resolve().is_relative_to(loaded.state_dir.resolve())


def run_daemon(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
    if getattr(args, "offline", False):
        loaded = _offline(loaded)
    else:
        for variable, user in missing_model_keys(loaded):
            print(
                f"warning: {variable} is not set, so {user} cannot answer: every message "
                f"gets an error until it is (export {variable}=..., or the secrets file); "
                "`thalos-bot run --offline` tries the channels with the echo model",
                file=sys.stderr,
                flush=True,
            )
    logging = loaded.settings.logging
    under_systemd = "INVOCATION_ID" in os.environ or "JOURNAL_STREAM" in os.environ
    if loaded.settings.enabled_channels() == ["console"] and not sys.stdin.isatty():
        raise ConfigError([_console_without_terminal(loaded)])
    if not under_systemd and _console_owns_terminal(loaded):
        log_file = loaded.state_dir / LOG_FILE
        with _open_log(loaded, log_file) as file:
            configure_logging(logging.level, "json", file)
            print(f"thalos-bot {__version__}: logs go to {log_file}", file=sys.stderr, flush=True)
            return _serve(loaded, channels=None)
    stream = sys.stdout if under_systemd else sys.stderr
    configure_logging(logging.level, "json" if under_systemd else logging.format, stream)
    return _serve(loaded, channels=None)


def missing_model_keys(loaded: LoadedConfig) -> list[tuple[str, str]]:
    """The model providers' key variables that are not set, and who needs each."""
    required: list[tuple[str, str]] = []
    if loaded.settings.provider.kind == "anthropic" and uses_default(loaded):
        required.append((API_KEY_ENV, "the Anthropic provider"))
    required.extend(provider_env(loaded))
    return [(var, user) for var, user in dict.fromkeys(required) if not os.environ.get(var)]


def _console_without_terminal(loaded: LoadedConfig) -> str:
    """Why ``run`` with only the console and no terminal refuses: it would read an
    empty stdin, exit 0 at once, and ``Restart=on-failure`` would never restart it."""
    return (
        f"{loaded.label}: channels: the console is the only channel enabled, and stdin is "
        "not a terminal (under systemd it never is); enable another channel (`thalos-bot "
        "init` sets one up), or use `thalos-bot chat` for piped input"
    )


def _console_owns_terminal(loaded: LoadedConfig) -> bool:
    """The console channel is enabled and this is a terminal: log lines would land in
    its prompt."""
    enabled = "console" in loaded.settings.enabled_channels()
    return enabled and sys.stdin.isatty() and sys.stdout.isatty()


def _serve(loaded: LoadedConfig, channels: list[str] | None) -> int:
    telemetry = setup_telemetry(loaded.settings.telemetry)
    try:
        return anyio.run(_main, loaded, channels)
    except DatabaseError as exc:
        # The state folder's database cannot be opened: a restart does not mend it.
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except SkillSyncError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except BaseExceptionGroup as group:
        fatal = found_in(group, ChannelFatalError)
        if fatal is not None:
            print(f"error: {fatal.message}", file=sys.stderr)
            return fatal.exit_code
        config = found_in(group, ConfigError)
        if config is not None:
            for problem in config.problems:
                print(f"error: {problem}", file=sys.stderr)
            return EXIT_CONFIG
        # Raised inside the host's task groups (the start-up warm-up runs from the
        # start), so they arrive wrapped.
        database = found_in(group, DatabaseError)
        if database is not None:
            print(f"error: {database}", file=sys.stderr)
            return EXIT_CONFIG
        skills = found_in(group, SkillSyncError)
        if skills is not None:
            print(f"error: {skills}", file=sys.stderr)
            return EXIT_FAILURE
        unusable = found_in(group, OSError)
        if unusable is not None and _in_state_dir(loaded, unusable):
            print(f"error: {state_dir_problem(loaded, unusable)}", file=sys.stderr)
            return EXIT_CONFIG
        raise
    except OSError as exc:
        if not _in_state_dir(loaded, exc):
            raise
        print(f"error: {state_dir_problem(loaded, exc)}", file=sys.stderr)
        return EXIT_CONFIG
    except ChannelFatalError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    finally:
        telemetry.shutdown()


async def _main(loaded: LoadedConfig, channels: list[str] | None) -> int:
    notifier = Notifier.from_environment()
    # Only the daemon keeps a status file: `chat` is not what `thalos-bot status` asks about.
    status = StatusFile(loaded.state_dir) if channels is None else None

    def tick() -> None:
        notifier.watchdog()
        if status is not None:
            status.tick()

    try:
        async with (
            open_host(loaded, channels=channels, on_tick=tick) as host,
            anyio.create_task_group() as group,
        ):
            if status is not None:
                status.pairs = list(host.channels)
                status.set("starting")
            # In `chat`, Ctrl-C belongs to the console (it cancels an answer or quits at
            # the prompt), so only the daemon listens for SIGINT as a stop request.
            stop_signals = [signal.SIGTERM, signal.SIGHUP]
            if channels is None:
                stop_signals.append(signal.SIGINT)
            group.start_soon(_stop_on_signals, host.pump, notifier, stop_signals)
            group.start_soon(_announce_ready, host, notifier, status)
            settle_heap()  # before the first message: full collections stay short
            await host.pump.run(host.sources)
            group.cancel_scope.cancel()
    finally:
        if status is not None and status.pairs:
            status.set("stopped")
    notifier.stopping()
    if channels is not None and _failed_turns(host) > 0:
        return EXIT_FAILURE
    return EXIT_OK


async def _resume_line(loaded: LoadedConfig) -> str | None:
    """Read before the prompt appears; a database that cannot open is reported by the
    host a moment later, so here it only means there is nothing to continue."""
    target = loaded.settings.storage.target
    catalog, idle = build_catalog(loaded.settings), loaded.settings.pump.idle_timeout
    try:
        if target.kind == "postgresql":
            assert target.url is not None
            async with await PgDatabase.open(target.url, migrations=PG_ALL_MIGRATIONS) as pg:
                return await resume_line(PgConversationMap(pg), catalog, idle)
        if not loaded.database_path.exists():
            return None
        async with await Database.open(loaded.database_path, migrations=ALL_MIGRATIONS) as db:
            return await resume_line(SqliteConversationMap(db), catalog, idle)
    except DatabaseError:
        return None


def _failed_turns(host: Host) -> int:
    """Turns that failed on channels that count them (the console does)."""
    return sum(
        pair.adapter.failed_turns
        for pair in host.channels
        if isinstance(pair.adapter, CountsFailures)
    )


WARM_UP_WAIT = 30.0
"""READY waits this long at most for the start-up warm-up (a load that hangs must not
keep systemd waiting until its start timeout)."""


async def _announce_ready(host: Host, notifier: Notifier, status: StatusFile | None) -> None:
    """READY=1 once every channel receives and what the first turn would load lazily is
    loaded (the database is open by now), or, when a
    channel has failed to reach its service and keeps retrying (a boot without network),
    READY=1 with a "degraded" status at once, so systemd's start timeout never fires;
    "serving" follows when the last channel receives."""
    for pair in host.channels:
        await _either(pair.receiving, pair.retrying)
    receiving = anyio.current_time()
    if host.warm_up is not None:
        with anyio.move_on_after(WARM_UP_WAIT) as waited:
            await host.warm_up.done.wait()
        if waited.cancelled_caught:
            log.warning("ready_before_warm_up", parts=host.warm_up.parts, waited=WARM_UP_WAIT)
    waited_for_warm_up = round(anyio.current_time() - receiving, 3)
    names = ", ".join(pair.describe for pair in host.channels)
    behind = [pair for pair in host.channels if not pair.receiving.is_set()]
    if behind:
        waiting = ", ".join(str(pair.adapter.channel_id) for pair in behind)
        detail = f"{waiting} not reached yet; retrying"
        log.warning("ready_degraded", channels=[str(p.adapter.channel_id) for p in behind])
        if status is not None:
            status.set("degraded", detail)
        notifier.ready(f"degraded: {detail}")
        for pair in behind:
            await pair.receiving.wait()
    log.info(
        "ready",
        channels=[pair.describe for pair in host.channels],
        waited_for_warm_up=waited_for_warm_up,
    )
    if status is not None:
        status.set("ready")
    if behind:
        notifier.status(f"serving: {names}")
    else:
        notifier.ready(f"serving: {names}")


async def _either(first: anyio.Event, second: anyio.Event) -> None:
    """Return once either event is set."""
    if first.is_set() or second.is_set():
        return
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        group.start_soon(wait, first)
        group.start_soon(wait, second)


async def _stop_on_signals(
    pump: ChannelPump, notifier: Notifier, stop_signals: list[signal.Signals]
) -> None:
    with anyio.open_signal_receiver(*stop_signals) as signals:
        async for signum in signals:
            log.info("signal_received", signal=signal.Signals(signum).name)
            notifier.stopping(f"stopping: {pump.running_turns} answers still running")
            pump.stop()
