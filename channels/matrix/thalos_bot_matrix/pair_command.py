"""What ``thalos-bot matrix pair`` does, step by step, around :mod:`.pairing`."""

from __future__ import annotations

import time
from pathlib import Path

from thalos_bot.channels.admission.pair_command import (
    EXIT_CONFIG,
    EXIT_NOT_ADDED,
    Ask,
    Show,
    confirm_and_add,
    section_while_pairing,
    show_line,
)
from thalos_bot.channels.admission.pairing import CODE_TTL, Clock, PairingCode, PairingError
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.config.loader import (
    ConfigError,
    display_path,
    load_settings,
)
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError, new_txn
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.pairing import Person, wait_for_code
from thalos_bot_matrix.render import message
from thalos_bot_matrix.session import sign_in
from thalos_bot_matrix.state import SyncState

PAIRED = (
    "You're paired: this bot now answers you. (If it does not yet, it is not running: "
    "`thalos-bot run`, or restart the service.)"
)


def pairing_config(path: Path) -> MatrixConfig:
    """The ``[channels.matrix]`` settings, read as if off (it may list nobody yet)."""
    return section_while_pairing(path, MatrixConfig, "matrix")


def _state_dir(path: Path) -> Path:
    """The daemon's state folder for this config (where the sync position is kept)."""
    return load_settings(path).state_dir


async def pair(
    path: Path,
    *,
    yes: bool,
    ask: Ask | None,
    show: Show = show_line,
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
    allowed = await confirm_and_add(
        path,
        person.user_id,
        channel="matrix",
        title="Matrix",
        described=person.user_id,
        yes=yes,
        ask=ask,
        show=show,
    )
    return 0 if allowed else EXIT_NOT_ADDED
