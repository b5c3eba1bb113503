"""``thalos-bot matrix setup-encryption``: the account's cross-signing set up (or checked)
from the command line, and its recovery key printed once.

Run it with the daemon stopped: it uses the same device and store. It signs in as the
daemon does, loads (or makes) the device's keys, then :func:`.cross_signing.ensure`
bootstraps the account's cross-signing, restores it with ``THALOS_MATRIX_RECOVERY_KEY``,
or finds it in place. A recovery key that was made here or by the daemon's first start
waits in a private file in the state folder: it is printed, then the file is removed,
so the key is shown once and kept only where the operator puts it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

import anyio

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission.pair_cli import config_option
from thalos_bot.channels.ports import EXIT_CONFIG
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot_matrix import PASSWORD_ENV, cross_signing
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.recovery import RecoveryKeyError
from thalos_bot_matrix.session import sign_in

EXIT_FAILED = 1


def register(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = actions.add_parser(
        "setup-encryption",
        help="cross-sign the bot's device and print the recovery key once",
    )
    config_option(command, "the bot.toml to read")

    def run(args: argparse.Namespace) -> int:
        path = kit.config_file(args.config)
        if path is None:
            return EXIT_CONFIG
        result: int = anyio.run(setup_encryption, path)
        return result

    command.set_defaults(handler=run, quiet_logs=True)


async def setup_encryption(path: Path, out: TextIO | None = None) -> int:
    """The command's work; the exit code."""
    write = (out or sys.stdout).write
    config = kit.section_while_pairing(path, MatrixConfig, "matrix")
    if not config.homeserver or not config.user_id:
        raise ConfigError(["set homeserver and user_id under [channels.matrix] first"])
    loaded = load_settings(path)
    if loaded.settings.storage.target.kind == "postgresql":
        write(
            "On a postgresql:// store the replicas share the device's keys: the replica that "
            "opens the sync loop cross-signs the device itself (docs/matrix.md, Replicas).\n"
        )
        return EXIT_FAILED
    state_dir = loaded.state_dir
    client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
    try:
        identity = await sign_in(client, config, state_dir)
        if identity.device_id is None:
            write("The homeserver named no device id: encryption cannot be set up.\n")
            return EXIT_FAILED
        store = await anyio.to_thread.run_sync(
            CryptoStore.load, state_dir, config.user_id, identity.device_id
        )
        try:
            crypto = Crypto(client, store)
            await crypto.start()
            key_file = cross_signing.recovery_key_file(state_dir, config.user_id)
            outcome = await cross_signing.ensure(
                crypto,
                password=os.environ.get(PASSWORD_ENV) or None,
                recovery_key=os.environ.get(cross_signing.RECOVERY_ENV) or None,
                key_file=key_file,
            )
        finally:
            store.close()
    except (
        cross_signing.CrossSigningError,
        RecoveryKeyError,
        MatrixError,
        UnreachableError,
    ) as exc:
        write(f"Cross-signing could not be set up: {exc}\n")
        return EXIT_FAILED
    finally:
        await client.aclose()
    write(f"Cross-signing: {outcome}; the device {identity.device_id} is cross-signed.\n")
    if key_file.exists():
        key = key_file.read_text(encoding="utf-8").strip()
        write(
            "\nRecovery key (shown once; keep it somewhere safe, and give it to a new state\n"
            f"folder as {cross_signing.RECOVERY_ENV}):\n\n    {key}\n\n"
        )
        key_file.unlink()
    else:
        write("The recovery key was shown before (or came from the environment).\n")
    return 0
