"""A transport's manifest: all that describes it, importable without its platform SDK.

A plug-in's entry point (group ``thalos_bot.channels``) names its :class:`Manifest`,
which holds what the core asks of a transport without running it: the config model, the
environment it needs, a one-line summary for ``check``, its allowlist (who may still be
written to unasked), and where its doctor checks and its runtime live, as
``"module:attribute"`` names imported only when they are used. So ``check``, ``init`` and
``doctor`` describe a transport whose SDK is not installed, and a broken SDK install
fails the channel's start with a sentence, never the whole command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Hashable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from thalos_bot.channels.admission.allowlist import Allowlist, Seat
from thalos_bot.channels.admission.pair_cli import register_pair
from thalos_bot.channels.checks import Check
from thalos_bot.channels.ports import DeliveryAllowlist
from thalos_bot.domain.address import Address

if TYPE_CHECKING:
    from thalos_bot.channels.registry import ChannelHost, ChannelPair

K = TypeVar("K", bound=Hashable)
C = TypeVar("C", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Admission(Generic[K]):
    """Whom a transport's config allows, as the kit's allowlist reads it."""

    locate: Callable[[str], Seat[K]]
    """The transport's reading of a conversation id (ValueError: none of its own)."""
    transport: str
    """How refusals name a conversation id that is none of its own (``"Slack"``)."""
    users_key: str = ""
    """The config key listing the allowed users ("": the config model's ``users_key``)."""
    groups_key: str = "groups"
    group_word: str = "group"


def load(name: str) -> Any:
    """``"package.module:attribute"``, imported now."""
    module, _, attribute = name.partition(":")
    return getattr(import_module(module), attribute)


@dataclass(frozen=True, slots=True)
class Pairing:
    """A transport's ``pair`` command: its title, what the code finds, and the module
    whose ``pair(path, *, yes, ask)`` does its part (imported only when it runs)."""

    title: str
    finds: str
    module: str


@dataclass(frozen=True, slots=True)
class Secret:
    """A variable ``init`` asks for (and names in its next steps), and where to get it."""

    name: str
    where: str


@dataclass(frozen=True, slots=True)
class Setup:
    """How ``thalos-bot init`` offers the transport.

    ``init`` asks ``question`` (or reads ``--<name>`` / ``--no-<name>``), in ``order``
    among the transports. A chosen transport gets its ``[channels.<name>]`` table: the
    sample's commented block, uncommented when it has one, then ``keys`` set in it
    (``(key, value, comment)``). Its ``secrets`` are asked for the secrets file, and
    named in the next steps when they are not in it."""

    question: str
    order: int
    keys: tuple[tuple[str, Any, str], ...] = ()
    secrets: tuple[Secret, ...] = ()
    pair_step: str = ""
    """Why to run ``thalos-bot <name> pair`` next ("" when the next steps do not name it)."""
    pair_now: bool = False
    """Offer to pair right after init (with its first secret, when it was typed)."""
    serves: str = ""
    """What ``run`` then serves, for init's next steps (the web page's address)."""


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    config_model: type[BaseModel]
    summary: Callable[[BaseModel], str]
    """What the validated section describes, for ``check`` (without the env note)."""
    runtime: str
    """``"module:attribute"`` of the object whose ``open(config, host)`` runs the channel
    (the only import of the platform SDK)."""
    env: tuple[str | tuple[str, ...], ...] = ()
    """The environment variables it needs (its tokens); a tuple: any one of them (an
    access token, or a password to get one)."""
    env_for: Callable[[BaseModel], tuple[str, ...]] | None = None
    """More variables some settings need (Telegram's webhook secret in webhook mode)."""
    env_shared: Callable[[BaseModel], tuple[str, ...]] | None = None
    """More variables some settings need on a PostgreSQL store, where replicas share
    the channel's connection (Matrix's pickle key with encryption on)."""
    admission: Admission[Any] | None = None
    checks: str | None = None
    """``"module:function"`` of its doctor checks: ``async (config, offline=) -> list``."""
    exposure_checks: str | None = None
    """``"module:function"`` of its listeners' lines for ``doctor --security``:
    ``(config) -> list[Check]`` (None: it opens no listener)."""
    install: str = ""
    """How to install it, for the sentence that says it is not."""
    pairing: Pairing | None = None
    """``thalos-bot <name> pair``, when the transport pairs by a one-time code."""
    setup: Setup | None = None
    """What ``thalos-bot init`` asks and writes for it (None: init does not offer it)."""
    connection: Callable[[BaseModel], bool] | None = None
    """True when, with this config, the transport holds the platform's one connection
    (a gateway session, a socket, a sync loop, a long poll): among replicas sharing a
    PostgreSQL store only the holder of its connection lease opens it. None: not said
    here (the host knows the transports the project ships)."""
    send_side: bool = False
    """Its runtime also offers ``open_sending(config, host)``: the same wire and adapter
    without the receiving connection (sending is plain request and response). Among
    replicas every one opens that side, so a conversation's turns run on whichever
    replica holds its lease, not only on the connection's owner
    (:mod:`thalos_bot.service.anywhere`)."""
    answers_anywhere: bool = False
    """Every replica serves its listener (the web page), so an approval question's
    answer may reach a replica other than the one whose turn asked: on replicas the
    host relays its presses (:attr:`~thalos_bot.channels.registry.ChannelHost.presses`,
    :mod:`thalos_bot.service.press_relay`)."""

    def __post_init__(self) -> None:
        spec = self.admission
        if spec is not None and not spec.users_key:
            key = getattr(self.config_model, "users_key", "allowed_users")
            object.__setattr__(self, "admission", dataclasses.replace(spec, users_key=key))

    # -- what the core asks -------------------------------------------------------------

    def describe(self, config: BaseModel) -> str:
        missing = [
            " nor ".join(names) if len(names) == 1 else "neither " + " nor ".join(names)
            for names in self._groups()
            if not any(_set(name) for name in names)
        ]
        return self.summary(config) + (
            f"; note: {', '.join(missing)} is not set" if missing else ""
        )

    def required_env(self, config: BaseModel, *, shared: bool = False) -> list[str]:
        """Each variable it needs (of alternatives, the one set, else the first), on a
        PostgreSQL store when ``shared``."""
        chosen = [next((n for n in names if _set(n)), names[0]) for names in self._groups()]
        chosen += self.env_for(config) if self.env_for is not None else ()
        return chosen + list(self.env_shared(config) if shared and self.env_shared else ())

    def _groups(self) -> list[tuple[str, ...]]:
        return [(entry,) if isinstance(entry, str) else entry for entry in self.env]

    def allowlist(self, config: BaseModel) -> DeliveryAllowlist:
        spec = self.admission
        if spec is None:
            return _Everywhere()
        return Allowlist(
            frozenset(getattr(config, spec.users_key)),
            frozenset(getattr(config, spec.groups_key, ())),
            users_key=spec.users_key,
            groups_key=spec.groups_key,
            group_word=spec.group_word,
            locate=spec.locate,
            transport=spec.transport,
        )

    async def doctor(self, config: BaseModel, *, offline: bool) -> list[Check]:
        if self.checks is None:
            return []
        checks: list[Check] = await load(self.checks)(config, offline=offline)
        return checks

    def exposure(self, config: BaseModel) -> list[Check]:
        if self.exposure_checks is None:
            return []
        checks: list[Check] = load(self.exposure_checks)(config)
        return checks

    def offer(self) -> Setup | None:
        """What ``init`` offers: :attr:`setup`, with what pairing implies filled in for
        a transport that pairs (``enabled = false`` until paired, the empty allowlist,
        the pairing step); keys the setup names itself win."""
        setup, pairing = self.setup, self.pairing
        if setup is None or pairing is None or self.admission is None:
            return setup
        pair = f"`thalos-bot {self.name} pair`"
        implied = {
            "enabled": (False, f"{pair} turns it on"),
            self.admission.users_key: ([], f"{pairing.finds}: {pair} adds it"),
        }
        keys = {**implied, **{key: (value, note) for key, value, note in setup.keys}}
        return dataclasses.replace(
            setup,
            keys=tuple((key, value, note) for key, (value, note) in keys.items()),
            pair_step=setup.pair_step or f"finds {pairing.finds}, turns {pairing.title} on",
        )

    def register(
        self, commands: argparse._SubParsersAction[argparse.ArgumentParser]
    ) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
        """The transport's own subcommands (the ``thalos_bot.commands`` entry point names
        this method): ``pair``, when it pairs. Returns the channel's actions, for a
        transport to add its own beside ``pair`` (None when it does not pair)."""
        spec = self.pairing
        if spec is None:
            return None
        return register_pair(
            commands, self.name, title=spec.title, finds=spec.finds, module=spec.module
        )

    def open(
        self, config: BaseModel, host: ChannelHost
    ) -> AbstractAsyncContextManager[ChannelPair]:
        opened: AbstractAsyncContextManager[ChannelPair] = load(self.runtime).open(config, host)
        return opened

    def open_sending(
        self, config: BaseModel, host: ChannelHost
    ) -> AbstractAsyncContextManager[ChannelPair]:
        """The send-only side (only when :attr:`send_side`)."""
        opened: AbstractAsyncContextManager[ChannelPair] = load(self.runtime).open_sending(
            config, host
        )
        return opened


def plug_in(
    name: str,
    config_model: type[C],
    summary: Callable[[C], str],
    *,
    env_for: Callable[[C], tuple[str, ...]] | None = None,
    order: int,
    question: str = "",
    keys: tuple[tuple[str, Any, str], ...] = (),
    secrets: tuple[Secret, ...] = (),
    env: tuple[str | tuple[str, ...], ...] | None = None,
    finds: str = "",
    pair_module: str = "pair",
    pair_step: str = "",
    pair_now: bool = False,
    serves: str = "",
    install_note: str = "",
    exposure: bool = False,
    **more: Any,
) -> Manifest:
    """The manifest of the plug-in package ``thalos_bot_<name>``, laid out as every one
    is: its runtime at ``.plugin:plugin``, its doctor checks at ``.doctor:<name>_checks``
    (``exposure``: its listeners' at ``.exposure:<name>_exposure``), installed from
    ``./channels/<name>`` (``install_note`` adds to that sentence), titled by its name
    capitalised. ``init`` offers it at ``order`` with ``question`` (default "Use
    <title>?"), writing ``keys`` and asking for ``secrets``, which are also the
    environment it needs unless ``env`` says otherwise. ``finds``: it pairs by a code,
    which finds that (its ``pair`` in ``.<pair_module>``). ``summary`` and ``env_for``
    read the transport's own config model. ``more``: any other field of
    :class:`Manifest`, as it is."""

    def own(config: BaseModel) -> C:
        assert isinstance(config, config_model)
        return config

    package = f"thalos_bot_{name}"
    title = name.capitalize()
    more.setdefault("checks", f"{package}.doctor:{name}_checks")
    if exposure:
        more["exposure_checks"] = f"{package}.exposure:{name}_exposure"
    return Manifest(
        name=name,
        config_model=config_model,
        summary=lambda config: summary(own(config)),
        env_for=None if env_for is None else lambda config: env_for(own(config)),
        runtime=f"{package}.plugin:plugin",
        env=tuple(secret.name for secret in secrets) if env is None else env,
        pairing=Pairing(title, finds, f"{package}.{pair_module}") if finds else None,
        setup=Setup(question or f"Use {title}?", order, keys, secrets, pair_step, pair_now, serves),
        install=f"from a checkout, `pip install ./channels/{name}` into the same "
        f"environment{install_note}",
        **more,
    )


def _set(name: str) -> bool:
    return bool(os.environ.get(name, "").strip())


class _Everywhere:
    """A transport whose every conversation may be written to (its own admission has
    no config of its own to consult)."""

    def refusal(self, address: Address) -> str | None:
        return None
