"""The Slack fake's workspace: users, conversations, messages, files, streams.

Pure data, numbered as Slack numbers it: a message's ``ts`` is a string of seconds and
six digits of microseconds, unique within its channel and increasing; replies name their
parent's ``ts`` in ``thread_ts``; conversation ids start with ``C`` (public channel),
``G`` (private) or ``D`` (a direct message), user ids with ``U``, file ids with ``F``.
The fake's server holds the lock while it reads or changes this.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Literal

ConversationKind = Literal["im", "channel", "group"]

MAX_TEXT = 40_000
"""``chat.postMessage`` answers ``msg_too_long`` past this many characters of ``text``."""
MAX_MARKDOWN = 12_000
"""``markdown_text`` and a ``markdown`` block take at most this many characters."""
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3_000


@dataclass(slots=True)
class Message:
    ts: str
    channel: str
    user: str
    """Who posted it (the bot's user id for the bot's own messages)."""
    text: str = ""
    markdown_text: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None
    metadata: dict[str, Any] | None = None
    bot: bool = False
    edits: int = 0
    files: list[str] = field(default_factory=list)
    streaming: bool = False
    """Open chat stream (``chat.startStream`` until ``chat.stopStream``)."""
    history: list[str] = field(default_factory=list)
    """Every text the message showed, in order (the first post, then each update)."""

    @property
    def shown(self) -> str:
        """What a person reads: the markdown text when given, else ``text``."""
        return self.markdown_text if self.markdown_text is not None else self.text

    def to_api(self, *, with_metadata: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.shown}
        if self.bot:
            out["bot_id"] = "B0FAKEBOT"
            out["user"] = self.user
        else:
            out["user"] = self.user
        if self.blocks:
            out["blocks"] = self.blocks
        if self.thread_ts is not None:
            out["thread_ts"] = self.thread_ts
        if self.edits:
            out["edited"] = {"user": self.user, "ts": self.ts}
        if self.files:
            out["files"] = [{"id": f} for f in self.files]
        if with_metadata and self.metadata is not None:
            out["metadata"] = self.metadata
        return out


@dataclass(slots=True)
class Conversation:
    id: str
    kind: ConversationKind
    members: set[str]
    name: str = ""
    messages: list[Message] = field(default_factory=list)

    def find(self, ts: str) -> Message | None:
        for message in self.messages:
            if message.ts == ts:
                return message
        return None


@dataclass(slots=True)
class StoredFile:
    id: str
    name: str
    length: int
    data: bytes | None = None
    mimetype: str = "application/octet-stream"
    uploader: str = ""
    completed: bool = False
    title: str = ""
    external_url: str | None = None
    """A file kept elsewhere (Google Drive, an app's remote file): Slack names that host
    in its ``url_private``."""


class Workspace:
    """One team with one bot user. ``users`` are the people; the bot is ``bot_user``."""

    def __init__(self, team_id: str = "T0FAKETEAM", bot_user: str = "U0THALOSBOT") -> None:
        self.team_id = team_id
        self.bot_user = bot_user
        self.app_id = "A0FAKEAPP"
        self.scopes = {"channels:history", "groups:history", "im:history", "mpim:history"}
        """The bot token's scopes (of those the fake checks)."""
        self.conversations: dict[str, Conversation] = {}
        self.files: dict[str, StoredFile] = {}
        self._clock = itertools.count(int(time.time()) * 1_000_000)
        self._ids = itertools.count(1)

    def next_ts(self) -> str:
        micros = max(next(self._clock), int(time.time() * 1_000_000))
        self._clock = itertools.count(micros + 1)
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def new_id(self, prefix: str) -> str:
        return f"{prefix}0{next(self._ids):08X}"

    def dm_with(self, user: str) -> Conversation:
        for conversation in self.conversations.values():
            if conversation.kind == "im" and user in conversation.members:
                return conversation
        conversation = Conversation(self.new_id("D"), "im", {user, self.bot_user})
        self.conversations[conversation.id] = conversation
        return conversation

    def channel(self, channel_id: str, *, bot_member: bool = True) -> Conversation:
        conversation = self.conversations.get(channel_id)
        if conversation is None:
            kind: ConversationKind = "group" if channel_id.startswith("G") else "channel"
            members = {self.bot_user} if bot_member else set()
            conversation = Conversation(channel_id, kind, members, name=channel_id.lower())
            self.conversations[channel_id] = conversation
        return conversation

    def post(
        self,
        channel: Conversation,
        user: str,
        text: str,
        *,
        thread_ts: str | None = None,
        bot: bool = False,
        **extra: Any,
    ) -> Message:
        message = Message(
            self.next_ts(), channel.id, user, text, thread_ts=thread_ts, bot=bot, **extra
        )
        message.history.append(message.shown)
        channel.messages.append(message)
        return message
