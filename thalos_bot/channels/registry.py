"""Channel plugins, discovered through the ``thalos_bot.channels`` entry-point group.

A plugin names its channel, validates its ``[channels.<name>]`` section with its own
pydantic model, and opens the channel as an async context manager yielding a
:class:`ChannelPair` (the source the pump reads and the adapter it renders through).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio
import structlog
from pydantic import BaseModel

from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.people import section_seats
from thalos_bot.config.loader import ConfigError, validate
from thalos_bot.config.storage import StorageTarget
from thalos_bot.domain.people import People
from thalos_bot.shipped import ShippedFileMissingError, shipped

if TYPE_CHECKING:
    # Only annotations: the files, transcription and shared-store modules load PDF,
    # HTTP and PostgreSQL libraries, which a command that lists or checks never uses.
    from anyio.abc import TaskGroup

    from thalos_bot.channels.admission.guard import Notify
    from thalos_bot.channels.approvals.relay import Presses
    from thalos_bot.channels.connection_state import ConnectionRows, ConnectionState
    from thalos_bot.channels.inlet import Inlet
    from thalos_bot.channels.intake.files import FileSource, Intake
    from thalos_bot.channels.listeners.served import ApiMaker, DashboardMaker, Served
    from thalos_bot.channels.listeners.shared_rate import RateBuckets
    from thalos_bot.channels.logins import SharedLogins
    from thalos_bot.channels.marks import ChatMarks
    from thalos_bot.channels.page_events import SharedPageEvents
    from thalos_bot.channels.people import Seats
    from thalos_bot.channels.ports import ChannelAdapter, ChannelSource, DeliveryAllowlist
    from thalos_bot.cluster.leases import FenceSlot
    from thalos_bot.config.models import Settings
    from thalos_bot.config.transcription import TranscriptionSettings
    from thalos_bot.domain.address import Address
    from thalos_bot.domain.agents import AgentCatalog
    from thalos_bot.media.transcription import Transcriber

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "thalos_bot.channels"
SAMPLE_TABLE = re.compile(r"^#? ?\[channels\.(\w+)\]", re.MULTILINE)
"""A ``[channels.<name>]`` table of the shipped sample, commented out or not."""


def shipped_channels() -> list[str]:
    """The transports this project ships, installed or not: those the shipped sample
    ``bot.toml`` has a table for (for "did you mean" and "install it")."""
    try:
        sample = shipped("bot.toml").read_text(encoding="utf-8")
    except ShippedFileMissingError:
        return []
    return list(dict.fromkeys(SAMPLE_TABLE.findall(sample)))


def install_hint(name: str) -> str:
    """How to install a shipped transport that is not installed."""
    return (
        f"install it: from a checkout, `pip install ./channels/{name}` into the same "
        "environment (README, section Install, has the uv and pipx forms)"
    )


def _already_set() -> anyio.Event:
    event = anyio.Event()
    event.set()
    return event


@dataclass(frozen=True, slots=True)
class ChannelPair:
    source: ChannelSource
    adapter: ChannelAdapter
    describe: str = ""
    """One line for the start-up summary, e.g. ``"telegram: polling as @my_bot"``."""
    receiving: anyio.Event = field(default_factory=_already_set)
    """Set once the channel really receives (e.g. a first long poll came back); the
    daemon reports readiness to systemd when every channel's is set, or degraded
    readiness when a channel that is not receiving yet has failed and keeps retrying."""
    retrying: anyio.Event = field(default_factory=anyio.Event)
    """Set once the channel has tried to receive and failed; it goes on trying (e.g. no
    network at boot). Never set for a channel that cannot fail that way."""
    health: ChannelHealth = field(default_factory=ChannelHealth)
    """When it last worked and what last went wrong, for ``thalos-bot status``."""


@dataclass(frozen=True, slots=True)
class ChannelHost:
    """What a channel may know about the host it runs in: what the plug-ins use, never
    the whole configuration."""

    catalog: AgentCatalog
    state_dir: Path
    """Where a channel may keep small files of its own (e.g. console input history)."""
    transcription: TranscriptionSettings | None = None
    """``[transcription]``: how voice notes become text (None: they get a notice)."""
    storage: StorageTarget = field(default_factory=lambda: StorageTarget("sqlite", None, None))
    """Where the daemon's state lives (PostgreSQL: replicas share it)."""
    marks: ChatMarks | None = None
    """Where a channel may keep the highest message id it knows per chat (None: it
    forgets them at each start)."""
    dashboard: DashboardMaker | None = None
    """The dashboard over the daemon's stores, for a channel that serves it behind its
    login (the web channel); None outside the daemon."""
    fence: FenceSlot | None = None
    """Replicas: the fence the PostgreSQL session store checks in each turn's commit; a
    channel that holds conversation leases puts its lease book in it."""
    connection_state: ConnectionState | None = None
    """Replicas: where a channel that holds a platform connection keeps its position for
    the replica that takes the connection over (fenced by the connection's lease; see
    :mod:`thalos_bot.channels.connection_state`). None: one process; the channel keeps
    it in its state folder."""
    connection_rows: ConnectionRows | None = None
    """Replicas: where such a channel keeps many rows (Matrix's encryption keys), under
    the same fence. None: one process, the state folder."""
    people: People = field(default_factory=People)
    """``[[people]]``: whom each sender is (see :meth:`seats`)."""
    api: ApiMaker | None = None
    """The OpenAI-compatible API over the daemon's keys, for a channel that serves it on
    its listener (the web channel, with ``api = true``); None outside the daemon."""
    hooks: Served | None = None
    """The webhooks, for a channel that serves them on its listener (the web channel);
    None when no ``[[hooks]]`` are configured."""
    logins: SharedLogins | None = None
    """The page's signing secret, logouts and login codes in the daemon's store (see
    :mod:`thalos_bot.channels.logins`); None outside the daemon (a channel that serves a
    login needs it)."""
    page_events: SharedPageEvents | None = None
    """The pages' events, numbered per conversation in the daemon's store (see
    :mod:`thalos_bot.channels.page_events`); None outside the daemon (a channel that
    serves a page needs it)."""
    rates: RateBuckets | None = None
    """Replicas: the buckets a listener's per-address limit draws from, so it holds for
    the whole bot (see :mod:`thalos_bot.channels.listeners.shared_rate`); None: one
    process counts its own."""
    presses: Presses | None = None
    """Replicas, a channel whose turns run on any replica, or whose listener every
    replica serves: its approval presses relayed among them (see
    :mod:`thalos_bot.channels.approvals.relay`); None: one process."""

    def seats(self, transport: str, settings: BaseModel) -> Seats:
        """Whom ``transport``'s senders run as, by their platform ids."""
        seats = section_seats(transport, settings, self.people)
        assert seats is not None, "a section with an allowlist or logins"
        return seats

    def transcriber(self) -> Transcriber | None:
        """The ``[transcription]`` client for voice notes (None: they get a notice)."""
        from thalos_bot.media.transcription import Transcriber

        return Transcriber(self.transcription) if self.transcription is not None else None

    def intake(
        self,
        inlet: Inlet,
        files: FileSource,
        group: TaskGroup,
        *,
        text_file_max_chars: int,
        notify: Notify | None = None,
        album_settle: float = 0.0,
    ) -> Intake:
        """The kit's intake for a transport's files (an album gathered over
        ``album_settle`` seconds): what is ready, and every notice, goes to ``inlet``
        (``notify``: a notice in its own tone); voice notes through this host's
        transcriber."""
        from thalos_bot.channels.admission.guard import UpdateGuard
        from thalos_bot.channels.intake.files import Intake, IntakeSettings

        channel = str(inlet.channel_id)
        return Intake(
            files,
            group=group,
            hand_over=inlet.hand_over,
            notify=notify or inlet.notify,
            transcriber=self.transcriber(),
            settings=IntakeSettings(album_settle, text_file_max_chars),
            guard=UpdateGuard(channel),
            channel=channel,
            taken=inlet.all_taken,
        )

    @classmethod
    def of(
        cls,
        settings: Settings,
        catalog: AgentCatalog,
        state_dir: Path,
        *,
        marks: ChatMarks | None = None,
        dashboard: DashboardMaker | None = None,
        fence: FenceSlot | None = None,
        hooks: Served | None = None,
        api: ApiMaker | None = None,
        logins: SharedLogins | None = None,
        page_events: SharedPageEvents | None = None,
        rates: RateBuckets | None = None,
    ) -> ChannelHost:
        """The host's parts of ``settings`` that a channel uses."""
        return cls(
            catalog,
            state_dir,
            settings.transcription,
            settings.storage.target,
            marks=marks,
            dashboard=dashboard,
            fence=fence,
            hooks=hooks,
            people=settings.directory(),
            api=api,
            logins=logins,
            page_events=page_events,
            rates=rates,
        )


class ChannelPlugin(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def config_model(self) -> type[BaseModel]:
        """The pydantic model of its ``[channels.<name>]`` section."""
        ...

    def describe(self, config: BaseModel) -> str:
        """A one-line summary of the validated section, for ``thalos-bot check``."""
        ...

    def open(
        self, config: BaseModel, host: ChannelHost
    ) -> AbstractAsyncContextManager[ChannelPair]: ...


@runtime_checkable
class GuardsDelivery(Protocol):
    """Optional for a channel plugin: the allowlist its config sets, as a port the
    scheduler (and ``schedules list``) can ask without opening the channel."""

    def allowlist(self, config: BaseModel) -> DeliveryAllowlist: ...


@dataclass(frozen=True, slots=True)
class ChannelAllowlists:
    """Every channel's allowlist, asked by the address's channel. A channel without one
    (the console: its one conversation is the operator's terminal) allows its
    conversations."""

    by_channel: Mapping[str, DeliveryAllowlist] = field(default_factory=dict)

    def refusal(self, address: Address) -> str | None:
        allowlist = self.by_channel.get(address.channel_id)
        return None if allowlist is None else allowlist.refusal(address)


def allowlists(
    plugins: Mapping[str, ChannelPlugin], configs: Mapping[str, BaseModel]
) -> ChannelAllowlists:
    """The allowlists of the channels in ``configs`` (validated sections) whose plugin
    has one."""
    return ChannelAllowlists(
        {
            name: plugin.allowlist(configs[name])
            for name, plugin in plugins.items()
            if name in configs and isinstance(plugin, GuardsDelivery)
        }
    )


def section_principals(
    configs: Mapping[str, BaseModel],
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """What the sections name, for :class:`~thalos_bot.domain.people.RoleBook`: each
    principal given roles (``principal_id``; the web page's first login) with them, and
    the principals they name with none (``<transport>:<id>`` for each allowed user, the
    web page's other logins)."""
    granted: list[tuple[str, list[str]]] = []
    known: list[str] = []
    nobody = People()
    for name, config in configs.items():
        roles = [str(role) for role in getattr(config, "roles", [])]
        seats = section_seats(name, config, nobody)
        if seats is not None:
            granted.append((seats.channel.id, roles))
            known.extend(seats.context(user).id for user in seats.allowed[1:])
            continue
        principal = getattr(config, "principal_id", None)
        if isinstance(principal, str):  # the terminal
            granted.append((principal, roles))
    return granted, known


def discover() -> dict[str, ChannelPlugin]:
    plugins: dict[str, ChannelPlugin] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            plugin = entry.load()
        except Exception:
            log.exception("channel_plugin_failed_to_load", plugin=entry.name)
            continue
        plugins[entry.name] = plugin
    return plugins


def validate_channels(
    settings: Settings, label: str, plugins: Mapping[str, ChannelPlugin] | None = None
) -> dict[str, BaseModel]:
    """Validate every ``[channels.<name>]`` section with its plugin's model.

    Returns the validated config of every section (enabled or not); raises
    :class:`ConfigError` naming each bad key, or a section with no installed plugin.
    """
    plugins = discover() if plugins is None else plugins
    problems: list[str] = []
    validated: dict[str, BaseModel] = {}
    for name, section in settings.channels.items():
        enabled = section.get("enabled", False)
        if not isinstance(enabled, bool):
            problems.append(
                f"{label}: channels.{name}.enabled: must be true or false, not {enabled!r}"
            )
            continue
        plugin = plugins.get(name)
        if plugin is None:
            problems.append(_missing_plugin(label, name, plugins))
            continue
        try:
            validated[name] = validate(plugin.config_model, section, label, f"channels.{name}")
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    return validated


def _missing_plugin(label: str, name: str, plugins: Mapping[str, ChannelPlugin]) -> str:
    installed = ", ".join(sorted(plugins)) or "none"
    if name in shipped_channels():
        return (
            f"{label}: channels.{name}: the {name} channel is not installed "
            f"({install_hint(name)}); installed: {installed}"
        )
    known = sorted({*plugins, *shipped_channels()})
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"{label}: channels.{name}: no channel plugin named {name!r} is installed{hint}; "
        f"installed: {installed}"
    )
