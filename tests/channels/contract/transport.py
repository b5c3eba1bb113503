"""What a transport supplies to run the contract suite: a :class:`ContractTransport`,
built over its own fake or real server (see README.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel

from thalos_bot.channels.registry import ChannelPlugin

Who = Literal["user", "stranger"]
"""``user``: the one allowed person; ``stranger``: anyone else."""
Where = Literal["dm", "group"]
"""``dm``: the user's (or the stranger's) private chat with the bot; ``group``: the one
group the config serves, with both of them in it."""
Choice = Literal["once", "session", "deny"]
Style = Literal["bold", "italic", "strike", "code", "pre", "link"]


@dataclass(frozen=True, slots=True)
class Shown:
    """One message of the bot's, as a person in the chat sees it now."""

    text: str
    """Its visible text (an image's caption)."""
    styles: frozenset[Style] = frozenset()
    """The formatting it shows (rendered, not as Markdown markers)."""
    image: bool = False
    """It is an image."""


class ContractTransport(Protocol):
    """The fixture object a transport's test module provides."""

    plugin: ChannelPlugin
    """The transport's plug-in (as the entry point would find it)."""
    message_limit: int
    """Its message length limit, in UTF-16 code units (the kit's splitter's measure)."""
    # Optional: ``labelled_links = False`` where the platform shows no link with a label
    # (Signal): the Markdown case then wants the label followed by the address in
    # brackets, and no ``link`` style.

    def config(self) -> BaseModel:
        """The validated ``[channels.<name>]`` section: the user allowed, the group
        served, pacing fast enough for tests, streaming in whatever mode the transport
        does best. The same for every start."""
        ...

    def environment(self) -> dict[str, str]:
        """What the daemon as a process needs in its environment to reach the same
        server as :meth:`config`: the platform's token variables."""
        ...

    async def started(self) -> None:
        """Return once the channel just opened really receives."""
        ...

    async def say(
        self, text: str, *, who: Who = "user", where: Where = "dm", mention: bool = False
    ) -> None:
        """Post ``text`` as ``who`` (``mention``: addressed to the bot the platform's
        way; a DM needs none). Returns once the server has it."""
        ...

    async def send_image(self, data: bytes, caption: str, *, who: Who = "user") -> None:
        """Post a PNG with a caption in ``who``'s DM."""
        ...

    async def send_voice(self, data: bytes, seconds: float) -> None:
        """Post an OGG/Opus voice note (the platform's own voice message, or its audio
        file where it has none) in the user's DM."""
        ...

    def shown(self, *, who: Who = "user", where: Where = "dm") -> list[Shown]:
        """The bot's messages in that chat, oldest first, as they stand now."""
        ...

    async def wait_for(self, predicate: object, timeout: float = 15.0) -> None:
        """Wait (on the server's changes, never a fixed sleep) until ``predicate()`` is
        truthy; fail the test on timeout."""
        ...

    def flood_wait(self, seconds: float) -> None:
        """Make the server answer the bot's next send with a flood-control wait."""
        ...

    def sent_during_wait(self) -> int:
        """Calls the bot made to a chat while it was told to wait (must stay 0)."""
        ...

    def flooded(self) -> bool:
        """Has the server given the wait :meth:`flood_wait` set (so a case that sets one
        is never passed without it)?"""
        ...

    def refuse_next_send(self) -> None:
        """Make the next send be answered with a 5xx by a gateway in front of the server,
        never carried out."""
        ...

    def in_doubt(self) -> None:
        """Make the server carry out the bot's next send but lose its answer (a timeout
        or a dropped connection after the request was taken)."""
        ...

    def voices(self) -> list[float | None]:
        """The bot's voice messages (or audio files, where the platform has no voice
        message) in the user's DM, oldest first: each one's duration in seconds as the
        platform has it (None where it keeps none)."""
        ...

    async def answer_approval(self, choice: Choice, *, who: Who = "user") -> None:
        """Answer the open approval question in the user's DM the platform's way
        (a button, a reply, a reaction)."""
        ...

    def asked(self) -> bool:
        """Is an approval question shown in the user's DM?"""
        ...
