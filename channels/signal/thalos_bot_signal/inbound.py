"""Which signal-cli events (``{"envelope": {...}, "account": ...}``) become turns.

A ``dataMessage`` from an allowed user (by number or account UUID, as listed) is a turn
in ``dm:<them>``, or in a listed group only when it mentions the bot (a mention carries
the account's UUID, and its number where shared), the mention taken out of the text. A
reaction answers an approval question. Receipts and our own account's sync transcripts
feed the probe of a send in doubt (:mod:`.ledger`), never a turn. Everyone else gets
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from thalos_bot.channels.admission.mentions import strip_spans
from thalos_bot.channels.intake.files import FileKind, RemoteFile
from thalos_bot.channels.ports import Quoted
from thalos_bot.channels.text.measure import utf16_index
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.config import SignalConfig

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Admitted:
    place: Place
    user: str
    """The allowed user as listed."""
    display: str
    text: str
    received_at: datetime
    ref: str
    """``<timestamp>:<author>``: what a group answer quotes."""
    files: tuple[RemoteFile, ...] = ()
    quoted: Quoted | None = None


@dataclass(frozen=True, slots=True)
class Reaction:
    place: Place
    user: str
    display: str
    emoji: str
    target: str
    """The timestamp of the message reacted to."""


@dataclass(frozen=True, slots=True)
class Receipt:
    who: set[str]
    timestamps: list[int]


@dataclass(frozen=True, slots=True)
class Rules:
    account: str
    bot_uuid: str | None
    allowed: frozenset[str]
    groups: frozenset[str]
    quote_max_chars: int

    @classmethod
    def of(cls, account: str, config: SignalConfig) -> Rules:
        allowed, groups = frozenset(config.allowed_users), frozenset(config.groups)
        return cls(account, None, allowed, groups, config.quote_max_chars)

    def _ours(self, *ids: object) -> bool:
        return bool({self.account, self.bot_uuid} - {None} & set(ids))

    def read(self, event: JSON) -> Admitted | Reaction | Receipt | None:
        envelope = event.get("envelope")
        if not isinstance(envelope, dict):
            return None
        ids = _ids(envelope)
        if self._ours(*ids):
            return _sync(envelope, ids)
        receipt = envelope.get("receiptMessage")
        if isinstance(receipt, dict):
            stamps = [t for t in receipt.get("timestamps") or [] if isinstance(t, int)]
            return Receipt(ids, stamps) if stamps else None
        data = envelope.get("dataMessage")
        if not isinstance(data, dict):
            return None
        user = next((i for i in ids if i in self.allowed), None)
        if user is None:
            return None
        place = self._place(user, data)
        if place is None:
            return None
        display = str(envelope.get("sourceName") or user)
        reaction = data.get("reaction")
        if isinstance(reaction, dict):
            if reaction.get("isRemove") or not isinstance(reaction.get("emoji"), str):
                return None
            target = str(reaction.get("targetSentTimestamp", ""))
            return Reaction(place, user, display, reaction["emoji"], target)
        text = data.get("message")
        text = text if isinstance(text, str) else ""
        if place.kind == "group":
            if not (spans := self._mentions(text, data)):
                return None
            text = strip_spans(text, spans)
        files = _files(data)
        if not text.strip() and not files:
            return None
        stamp = int(data.get("timestamp") or envelope.get("timestamp") or 0)
        when = datetime.fromtimestamp(stamp / 1000, UTC) if stamp else datetime.now(UTC)
        return Admitted(
            place, user, display, text, when, f"{stamp}:{user}", files, self._quoted(data, ids)
        )

    def _place(self, user: str, data: JSON) -> Place | None:
        group = data.get("groupInfo")
        if not isinstance(group, dict):
            return Place("dm", user)
        group_id = group.get("groupId")
        if group_id in self.groups and group.get("type", "DELIVER") == "DELIVER":
            return Place("group", str(group_id))
        return None

    def _mentions(self, text: str, data: JSON) -> list[tuple[int, int]]:
        """The spans of ``text`` that mention the bot (counted in UTF-16 units)."""
        return [
            (
                utf16_index(text, start := int(m.get("start", 0))),
                utf16_index(text, start + int(m.get("length", 1))),
            )
            for m in data.get("mentions") or []
            if isinstance(m, dict) and self._ours(m.get("number"), m.get("uuid"))
        ]

    def _quoted(self, data: JSON, ids: set[str]) -> Quoted | None:
        quote = data.get("quote")
        text = quote.get("text") if isinstance(quote, dict) else None
        if not isinstance(quote, dict) or not isinstance(text, str):
            return None
        author = {quote.get("authorNumber"), quote.get("authorUuid"), quote.get("author")}
        bots, senders = self._ours(*author), bool(author & ids)
        return Quoted.capped(text, self.quote_max_chars, bots=bots, senders=senders)


def _strings(*values: object) -> set[str]:
    return {value for value in values if isinstance(value, str) and value}


def _ids(envelope: JSON) -> set[str]:
    return _strings(envelope.get("sourceNumber"), envelope.get("sourceUuid"))


def _sync(envelope: JSON, ids: set[str]) -> Receipt | None:
    """Our own account's transcript of a message sent by another of its devices."""
    sync = envelope.get("syncMessage")
    sent = sync.get("sentMessage") if isinstance(sync, dict) else None
    if not isinstance(sent, dict) or not isinstance(sent.get("timestamp"), int):
        return None
    group = sent.get("groupInfo")
    chat = _strings(sent.get("destinationNumber"), sent.get("destinationUuid"))
    if isinstance(group, dict):
        chat = _strings(group.get("groupId")) or chat
    return Receipt(chat, [sent["timestamp"]]) if chat else None


def _files(data: JSON) -> tuple[RemoteFile, ...]:
    files = []
    for item in data.get("attachments") or []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            mime, name = str(item.get("contentType") or ""), str(item.get("filename") or "")
            kind: FileKind = "photo" if mime.startswith("image/") else "document"
            if mime.startswith("audio/"):
                kind = "audio" if name else "voice"  # a voice note has no name
            size = item["size"] if isinstance(item.get("size"), int) else None
            ref = item["id"]
            files.append(RemoteFile(kind, ref, f"signal:{ref}", size, name, mime or None))
    return tuple(files)
