"""What every transport's ``thalos-bot <channel> pair`` shares around its wait for the
code: finding ``bot.toml``, reading the channel's section as if it were off (before
pairing it may list nobody), asking in the terminal, and adding the sender once they
are confirmed. The transport keeps only its own part: connecting, and recognising the
code in a private message. Its manifest says the rest (which section, which key, the
title); :class:`Awaited` is the wait for a transport that hears messages by callback,
and :class:`Hearing` the side around it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
from pydantic import BaseModel

from thalos_bot.channels.admission.config_edit import add_allowed
from thalos_bot.channels.admission.pairing import (
    CODE_TTL,
    Clock,
    PairingCode,
    PairingError,
    PairingExpiredError,
)
from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError
from thalos_bot.config.loader import ConfigError, display_path, find_config, read_toml, validate
from thalos_bot.domain.wrapped import found_in

if TYPE_CHECKING:
    from thalos_bot.channels.manifest import Manifest

Ask = Callable[[str], Awaitable[bool]]
Show = Callable[[str], None]
EXIT_NOT_ADDED = 1
M = TypeVar("M", bound=BaseModel)


def config_file(named: Path | None) -> Path | None:
    """The bot.toml to add the person to, or None (said on stderr) when there is none."""
    path = find_config(named)
    if path is None or not path.is_file():
        where = f"{path}" if path is not None else "./bot.toml"
        sys.stderr.write(
            f"error: there is no {where} to add you to; write one with `thalos-bot init` "
            "(or name it with --config)\n"
        )
        return None
    return path


def run_pair(args: argparse.Namespace, pair: Callable[..., Awaitable[int]]) -> int:
    """Run ``pair`` for the ``bot.toml`` the arguments name; the process's exit code."""
    path = config_file(args.config)
    if path is None:
        return EXIT_CONFIG
    result: int = anyio.run(lambda: pair(path, yes=args.yes, ask=terminal_ask()))
    return result


def terminal_ask() -> Ask | None:
    """A question asked in the terminal, or None when nobody is there to answer."""
    return _ask_in_terminal if sys.stdin.isatty() and sys.stdout.isatty() else None


async def _ask_in_terminal(question: str) -> bool:
    try:
        answer = await anyio.to_thread.run_sync(input, question)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


PAIRED = "You're paired: I'll answer you here from now on (once the daemon runs)."
"""Sent to the person once they are listed."""


def show_line(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def section_while_pairing(path: Path, model: type[M], channel: str) -> M:
    """``[channels.<channel>]`` validated as if off; errors name the file and the key."""
    raw: dict[str, Any] = read_toml(path)
    channels = raw.get("channels")
    section = channels.get(channel, {}) if isinstance(channels, dict) else {}
    if not isinstance(section, dict):
        section = {}
    return validate(model, {**section, "enabled": False}, display_path(path), f"channels.{channel}")


async def confirm_and_add(
    path: Path,
    person: int | str,
    *,
    channel: str,
    title: str,
    described: str,
    yes: bool,
    ask: Ask | None,
    show: Show,
    key: str = "allowed_users",
) -> bool:
    """Show who sent the code, ask (unless ``yes``), then add ``person`` to
    ``[channels.<channel>] <key>`` in ``path``; True when they are listed now."""
    label = display_path(path)
    show(f"The code came from {described}.")
    if not yes:
        if ask is None:
            listed = f'"{person}"' if isinstance(person, str) else str(person)  # as in TOML
            show(
                f"Not added: there is no terminal to ask. Run again with --yes, or add "
                f"{listed} to {key} under [channels.{channel}] in {label}."
            )
            return False
        if not await ask(f"Allow them to talk to the bot (add {person} to {label})? [y/N] "):
            show(f"Not added; {label} is unchanged.")
            return False
    added = add_allowed(path, channel, key, person)
    if added.already_listed:
        show(f"{person} was already in {key} in {label}.")
    else:
        show(f"Added {person} to {key} in {label}.")
    if added.enabled_now:
        show(f"The {title} channel is now enabled.")
    show("Next: `thalos-bot run` (or restart the service) and say hello to the bot.")
    return True


@dataclass(frozen=True, slots=True)
class Found:
    """Who sent the code: what goes into the allowlist, and how to name them."""

    person: int | str
    described: str
    reply_to: object = None
    """Where the transport tells them they are paired (a DM channel), if it needs it."""


async def told(
    send: Awaitable[object], refused: type[Exception] | tuple[type[Exception], ...]
) -> bool:
    """A side's :meth:`PairSide.tell`: whether ``send`` (the :data:`PAIRED` message)
    went out; False when the platform refused it with one of ``refused``."""
    try:
        await send
    except refused:
        return False
    return True


class PairSide(Protocol):
    """A transport's part of ``thalos-bot <channel> pair``: connecting, recognising the
    code in a private message, and telling the person. Everything else is the kit's
    (:func:`pair_with`)."""

    async def reach(self) -> str:
        """Connect; where the person sends the code ("@bot in a private chat"). Raises
        :class:`PairingError` when that cannot be done."""
        ...

    async def wait(self, code: PairingCode) -> Found | None:
        """The sender of ``code``; None once it expired. Raises :class:`PairingError`
        when the platform refuses."""
        ...

    async def tell(self, found: Found) -> bool:
        """Tell them they are paired (:data:`PAIRED`); False when the platform refused."""
        ...


class Awaited:
    """The wait for a code that a transport's message handler hears: the handler offers
    each private message to :meth:`hear`, the side's ``wait`` is :meth:`wait`."""

    def __init__(self) -> None:
        self.code: PairingCode | None = None
        self.found: Found | None = None
        self._heard = anyio.Event()

    def hear(self, text: str, sender: Callable[[], Found]) -> bool:
        """Whether ``text`` is the awaited code, sent first; then ``sender()`` is who
        sent it. Before the wait starts and after the code was heard, nothing is."""
        code = self.code
        if code is None or self.found is not None or not code.redeem(text):
            return False
        self.found = sender()
        self._heard.set()
        return True

    async def wait(self, code: PairingCode) -> Found | None:
        self.code = code
        with anyio.move_on_after(code.remaining):
            await self._heard.wait()
        return self.found


@dataclass
class Hearing:
    """A :class:`PairSide`'s wait for a transport that hears messages by callback (a
    dataclass to extend): its handler offers each private message to ``awaited``."""

    awaited: Awaited = field(default_factory=Awaited, kw_only=True)

    async def wait(self, code: PairingCode) -> Found | None:
        return await self.awaited.wait(code)


def _listing(manifest: Manifest) -> tuple[str, str]:
    """The transport's title and the config key its pairing adds people to."""
    assert manifest.pairing is not None
    assert manifest.admission is not None
    return manifest.pairing.title, manifest.admission.users_key


async def pair_with(
    path: Path,
    side: PairSide,
    manifest: Manifest,
    *,
    yes: bool,
    ask: Ask | None,
    show: Show = show_line,
    clock: Clock = time.monotonic,
    ttl: float = CODE_TTL,
) -> int:
    """Show a one-time code, wait for it, ask (unless ``yes``), add its sender to
    ``path`` (in the section and key ``manifest`` names) and tell them; the process exit
    code."""
    try:
        where = await side.reach()
    except PairingError as exc:
        show(f"error: {exc.message}")
        return EXIT_NOT_ADDED
    except ChannelFatalError as exc:  # the token refused, say
        show(f"error: {exc.message}")
        return exc.exit_code
    code = PairingCode(clock=clock, ttl=ttl)
    minutes = max(1, round(ttl / 60))
    show(f"Send this code to {where} within {minutes} minutes:")
    show(f"\n    {code.shown}\n")
    show("Waiting for it (Ctrl-C stops). The bot answers nobody while it waits.")
    try:
        found = await side.wait(code)
    except PairingError as exc:
        show(f"error: {exc.message}")
        return EXIT_NOT_ADDED
    if found is None:
        show(f"error: {PairingExpiredError(f'thalos-bot {manifest.name} pair').message}")
        return EXIT_NOT_ADDED
    title, key = _listing(manifest)
    added = await confirm_and_add(
        path,
        found.person,
        channel=manifest.name,
        title=title,
        key=key,
        described=found.described,
        yes=yes,
        ask=ask,
        show=show,
    )
    if not added:
        return EXIT_NOT_ADDED
    if not await side.tell(found):
        show(f"({title} did not take the message telling them; the pairing stands.)")
    return 0


async def pair_over(
    path: Path,
    side: Callable[[Any], AbstractAsyncContextManager[PairSide]],
    manifest: Manifest,
    *,
    yes: bool,
    ask: Ask | None,
    show: Show = show_line,
    clock: Clock = time.monotonic,
    ttl: float = CODE_TTL,
) -> int:
    """A transport's ``pair`` command: read its section of ``path`` as if off, open its
    ``side`` for it (which reads its secrets, connects, and closes all of it on exit)
    and run :func:`pair_with` over it. A bad section is each problem on its line and
    :data:`EXIT_CONFIG`; a secret missing or refused, or a platform setting the
    connection needs (raised in the side's tasks too), its sentence and its exit code."""
    try:
        config = section_while_pairing(path, manifest.config_model, manifest.name)
        async with side(config) as opened:
            return await pair_with(
                path, opened, manifest, yes=yes, ask=ask, show=show, clock=clock, ttl=ttl
            )
    except ConfigError as exc:
        for problem in exc.problems:
            show(f"error: {problem}")
        return EXIT_CONFIG
    except ChannelFatalError as exc:
        show(f"error: {exc.message}")
        return exc.exit_code
    except BaseExceptionGroup as group:  # raised by the side's connection, in its tasks
        fatal = found_in(group, ChannelFatalError)
        if fatal is None:
            raise
        show(f"error: {fatal.message}")
        return fatal.exit_code


class Pair(Protocol):
    """A transport's ``pair``, as :func:`run_pair` (and its tests) call it."""

    async def __call__(
        self,
        path: Path,
        *,
        yes: bool,
        ask: Ask | None,
        show: Show = ...,
        clock: Clock = ...,
        ttl: float = ...,
    ) -> int: ...


def pair_command(
    side: Callable[..., AbstractAsyncContextManager[PairSide]],
    manifest: Manifest,
    *,
    with_path: bool = False,
) -> Pair:
    """A transport's ``pair`` from the ``side`` it opens for its validated section: pair,
    then add the sender to the ``bot.toml`` named; the process's exit code
    (:func:`pair_over`). ``with_path``: the side is opened with the file's path too
    (``path=``), for what else it reads of it (Matrix: the state folder, the storage)."""

    async def pair(
        path: Path,
        *,
        yes: bool,
        ask: Ask | None,
        show: Show = show_line,
        clock: Clock = time.monotonic,
        ttl: float = CODE_TTL,
    ) -> int:
        opened = partial(side, path=path) if with_path else side
        return await pair_over(
            path, opened, manifest, yes=yes, ask=ask, show=show, clock=clock, ttl=ttl
        )

    return pair
