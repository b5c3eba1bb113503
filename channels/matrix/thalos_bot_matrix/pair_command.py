"""What ``thalos-bot matrix pair`` does, step by step, around :mod:`.pairing`."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from thalos_bot.channels.admission.pairing import CODE_TTL, Clock, PairingCode, PairingError
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.config.loader import (
    ConfigError,
    display_path,
    find_config,
    load_settings,
    read_toml,
    validate,
)
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.config_edit import add_allowed_user
from thalos_bot_matrix.pairing import Person, wait_for_code
from thalos_bot_matrix.render import message
from thalos_bot_matrix.session import sign_in
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.views import new_txn

Ask = Callable[[str], Awaitable[bool]]
Show = Callable[[str], None]

EXIT_NOT_ADDED = 1
EXIT_CONFIG = 2
PAIRED = (
    "You're paired: this bot now answers you. (If it does not yet, it is not running: "
    "`thalos-bot run`, or restart the service.)"
)


def run(args: argparse.Namespace) -> int:
    path = find_config(args.config)
    if path is None or not path.is_file():
        where = f"{path}" if path is not None else "./bot.toml"
        sys.stderr.write(
            f"error: there is no {where} to add you to; write one with `thalos-bot init` "
            "(or name it with --config)\n"
        )
        return EXIT_CONFIG
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    ask = _ask_in_terminal if interactive else None
    result: int = anyio.run(lambda: pair(path, yes=args.yes, ask=ask))
    return result


async def _ask_in_terminal(question: str) -> bool:
    try:
        answer = await anyio.to_thread.run_sync(input, question)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


def _show(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def pairing_config(path: Path) -> MatrixConfig:
    """The ``[channels.matrix]`` settings, read as if off (it may list nobody yet)."""
    raw: dict[str, Any] = read_toml(path)
    channels = raw.get("channels")
    section = channels.get("matrix", {}) if isinstance(channels, dict) else {}
    if not isinstance(section, dict):
        section = {}
    return validate(
        MatrixConfig, {**section, "enabled": False}, display_path(path), "channels.matrix"
    )


def _state_dir(path: Path) -> Path:
    """The daemon's state folder for this config (where the sync position is kept)."""
    return load_settings(path).state_dir


async def pair(
    path: Path,
    *,
    yes: bool,
    ask: Ask | None,
    show: Show = _show,
    clock: Clock = time.monotonic,
    sync_timeout: float | None = None,
) -> int:
    """Pair, then add the sender to ``path``. Returns the process exit code."""
    try:
        config = pairing_config(path)
    except ConfigError as exc:
        for problem in exc.problems:
            show(f"error: {problem}")
        return EXIT_CONFIG
    if not config.homeserver or not config.user_id:
        show(
            f"error: set homeserver and user_id under [channels.matrix] in {display_path(path)} "
            "first (the bot account's homeserver URL and its @name:server id)"
        )
        return EXIT_CONFIG
    try:
        state_dir = _state_dir(path)
    except ConfigError as exc:
        for problem in exc.problems:
            show(f"error: {problem}")
        return EXIT_CONFIG
    client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
    try:
        try:
            await sign_in(client, config, state_dir)
        except ChannelFatalError as exc:
            show(f"error: {exc.message}")
            return exc.exit_code
        except UnreachableError as exc:
            show(f"error: the homeserver cannot be reached at {config.homeserver}: {exc.reason}")
            return EXIT_NOT_ADDED
        code = PairingCode(clock=clock)
        show(
            f"Start a direct chat with {config.user_id} (with encryption off) and send it this "
            f"code within {round(CODE_TTL / 60)} minutes:"
        )
        show(f"\n    {code.shown}\n")
        show("Waiting for it (Ctrl-C stops). The bot answers nobody while it waits.")
        state = SyncState.load(state_dir, config.user_id)
        try:
            person = await wait_for_code(
                client,
                config.user_id,
                code,
                state,
                poll_s=config.sync_timeout if sync_timeout is None else sync_timeout,
            )
        except PairingError as exc:
            show(f"error: {exc.message}")
            return EXIT_NOT_ADDED
        outcome = await _allow(path, person, yes=yes, ask=ask, show=show)
        if outcome == 0:
            try:
                await client.send(
                    person.room_id, "m.room.message", new_txn(), message(PAIRED, notice=True)
                )
            except (MatrixError, UnreachableError):
                show("(The homeserver did not take the confirmation message; pairing is done.)")
        return outcome
    finally:
        await client.aclose()


async def _allow(path: Path, person: Person, *, yes: bool, ask: Ask | None, show: Show) -> int:
    label = display_path(path)
    show(f"The code came from {person.user_id}.")
    if not yes:
        question = f"Allow them to talk to the bot (add {person.user_id} to {label})? [y/N] "
        if ask is None:
            show(
                f"Not added: there is no terminal to ask. Run again with --yes, or add "
                f'"{person.user_id}" to allowed_users under [channels.matrix] in {label}.'
            )
            return EXIT_NOT_ADDED
        if not await ask(question):
            show(f"Not added; {label} is unchanged.")
            return EXIT_NOT_ADDED
    added = add_allowed_user(path, person.user_id)
    if added.already_listed:
        show(f"{person.user_id} was already in allowed_users in {label}.")
    else:
        show(f"Added {person.user_id} to allowed_users in {label}.")
    if added.enabled_now:
        show("The Matrix channel is now enabled.")
    show("Next: `thalos-bot run` (or restart the service) and say hello to the bot.")
    return 0
