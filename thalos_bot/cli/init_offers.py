"""What ``thalos-bot init`` offers in a terminal once ``bot.toml`` is written: the
secrets file, pairing right away, and an offline trial.

Secrets never go into ``bot.toml``. When the person asks for it, init writes them to
``thalos-bot.env`` beside it, mode 0600, in the format ``service install`` writes and
systemd's ``EnvironmentFile=`` reads (``NAME=value`` lines a shell can source too).
Pairing and the trial run the very commands ``thalos-bot <transport> pair`` and
``thalos-bot chat --offline`` run, through the same entry point.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from thalos_bot.channels.manifest import Secret, Setup
from thalos_bot.config.loader import display_path
from thalos_bot.providers.factory import API_KEY_ENV
from thalos_bot.service.install import SECRETS_NAME
from thalos_bot.storage.private import FILE_MODE

Ask = Callable[[str], str]
"""Asks a question and returns the answer (``input``; ``getpass`` for secrets)."""
Command = Callable[[Sequence[str]], int]
"""Runs a ``thalos-bot`` command line in this process and returns its exit code."""

SAFE_VALUE = re.compile(r"[A-Za-z0-9_:.\-]+")
"""What a key or bot token is made of; anything else (spaces, quotes, ``$``) would be
read differently by systemd and by a shell, so it is refused."""

SECRETS_HEADER = """\
# Secrets for thalos-bot, written by `thalos-bot init`. Keep this file 0600.
# thalos-bot reads them only from the environment:
#   in a shell:  set -a; . {path}; set +a
#   systemd:     EnvironmentFile={path}   (as `thalos-bot service install` writes)
# Values that bot.toml references as "${{NAME}}" go here too.
"""


@dataclass(slots=True)
class Offered:
    """What the offers did, for the next steps init prints."""

    secrets: Path | None = None
    values: dict[str, str] = field(default_factory=dict)


def sourceable(path: Path) -> str:
    """``path`` as ``.`` can take it: a bare name would be looked up on ``$PATH``."""
    shown = display_path(path)
    return shown if "/" in shown else f"./{shown}"


def run_command(argv: Sequence[str]) -> int:
    """The ``thalos-bot`` entry point itself, so an offer runs exactly that command."""
    from thalos_bot.cli.main import main

    return main(list(argv))


def ask_yes_no(ask: Ask, question: str) -> bool:
    """Yes or no (no by default, and at end of input); anything else asks again."""
    while True:
        try:
            answer = ask(f"{question} (y/N) [n]: ").strip().lower()
        except EOFError:
            return False
        if answer in {"", "n", "no"}:
            return False
        if answer in {"y", "yes"}:
            return True
        print("Please answer y or n.")


def _ask_value(ask_secret: Ask, name: str, where: str) -> str:
    """One secret, typed without echo; empty skips it, a malformed one is asked again."""
    while True:
        try:
            value = ask_secret(f"{name} ({where}; empty to fill in later): ").strip()
        except EOFError:
            return ""
        if not value or SAFE_VALUE.fullmatch(value):
            return value
        print(
            f"That does not look like a {name}: it has spaces, quotes or other characters "
            "a key never has. Paste it again, or leave it empty."
        )


def secrets_text(path: Path, values: dict[str, str]) -> str:
    names = [API_KEY_ENV, *(name for name in values if name != API_KEY_ENV)]
    lines = [f"{name}={values.get(name, '')}" for name in names]
    return SECRETS_HEADER.format(path=path) + "\n".join(lines) + "\n"


def write_secrets(path: Path, values: dict[str, str]) -> None:
    """Create ``path`` with mode 0600 from the start (never readable by others, not
    even for a moment); an existing file is never overwritten."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        os.fchmod(stream.fileno(), FILE_MODE)
        stream.write(secrets_text(path.resolve(), values))


def offer_secrets(folder: Path, secrets: Sequence[Secret], *, ask: Ask, ask_secret: Ask) -> Offered:
    """Ask whether to write the secrets file; if so, ask for the model's key and each of
    ``secrets`` (the chosen transports'), and write it."""
    path = folder / SECRETS_NAME
    shown = display_path(path)
    if path.exists():
        print(f"{shown} exists; it is kept as it is (it holds your secrets).")
        return Offered()
    if not ask_yes_no(ask, f"Write the secrets file now ({shown}, mode 0600)?"):
        return Offered()
    values = {API_KEY_ENV: _ask_value(ask_secret, API_KEY_ENV, "from console.anthropic.com")}
    for secret in secrets:
        values[secret.name] = _ask_value(ask_secret, secret.name, secret.where)
    try:
        write_secrets(path, values)
    except OSError as exc:
        print(
            f"error: cannot write {shown} ({exc.strerror or exc}); nothing was written. "
            f"Put the keys in the environment instead (export {API_KEY_ENV}=...)."
        )
        return Offered()
    filled = [name for name, value in values.items() if value]
    print(
        f"Wrote {shown} (mode 0600)"
        + (f" with {', '.join(filled)}." if filled else "; fill in the keys there.")
    )
    print(
        "thalos-bot reads secrets only from the environment, never from bot.toml: in a "
        f"shell, `set -a; . {sourceable(path)}; set +a` before `thalos-bot run` or `chat`; under "
        f"systemd, EnvironmentFile={path.resolve()}."
    )
    return Offered(secrets=path, values={k: v for k, v in values.items() if v})


def offer_pairing(
    target: Path,
    offered: Offered,
    transport: str,
    setup: Setup,
    *,
    title: str,
    ask: Ask,
    command: Command = run_command,
) -> int | None:
    """Ask whether to pair now; if so run ``<transport> pair`` on ``target``, with the
    transport's first secret (its token) in the environment. Its exit code, or None
    when it did not run."""
    config = f" --config {display_path(target)}"
    if not ask_yes_no(ask, f"Pair your {title} account now?"):
        return None
    token = setup.secrets[0] if setup.secrets else None
    typed = offered.values.get(token.name) if token is not None else None
    if token is not None and typed:
        os.environ[token.name] = typed  # for the pairing below, in this process only
    if token is not None and not os.environ.get(token.name, "").strip():
        source = (
            f"`set -a; . {sourceable(offered.secrets)}; set +a` once the token is in it"
            if offered.secrets is not None
            else f"`export {token.name}=...` ({token.where})"
        )
        print(
            f"Pairing needs {token.name} in the environment, and it is not set. Set it with "
            f"{source}, then pair with `thalos-bot {transport} pair{config}`."
        )
        return None
    return command([transport, "pair", "--config", str(target)])


def offer_trial(target: Path, *, ask: Ask, command: Command = run_command) -> int | None:
    """Ask whether to try the bot now with the offline echo model (no key needed)."""
    if not ask_yes_no(ask, "Try it now with the offline echo model (no key, no network)?"):
        return None
    print("Starting `thalos-bot chat --offline`; /exit leaves.")
    return command(["chat", "--offline", "--config", str(target)])
