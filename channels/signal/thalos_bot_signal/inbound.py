"""Which signal-cli events become conversation turns, and as what.

An event is ``{"envelope": {...}, "account": ...}``. A ``dataMessage`` from an allowed
user (by number or by account UUID, whichever the allowlist names) in a one-to-one chat
is a turn in ``dm:<them>``; one in a listed group (``groupInfo.groupId``) only when it
mentions the bot (a mention carries the mentioned account's UUID, and its number where
the mentioned person shares it); the mention itself is taken out of the text. A
reaction is an answer to an approval question, never a turn. Receipts and our own
account's sync transcripts are what the probe of a send in doubt listens to
(:mod:`.ledger`); a sync transcript (a message the owner sent from another device of the
bot's account) is never a turn. Everything else, and everyone else, gets nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from thalos_bot.channels.admission.mentions import strip_spans
from thalos_bot.channels.intake.files import FileKind, RemoteFile
from thalos_bot.channels.ports import Quoted
from thalos_bot_signal.addressing import Place

MENTION = "\ufffc"
"""What a mention stands as in a message's text."""

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

    def read(self, event: JSON) -> Admitted | Reaction | Receipt | None:
        envelope = event.get("envelope")
        if not isinstance(envelope, dict):
            return None
        ids = _ids(envelope)
        if self.account in ids or (self.bot_uuid is not None and self.bot_uuid in ids):
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
            if not self._mentioned(data):
                return None
            text = self._without_mentions(text, data)
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

    def _is_bot(self, mention: JSON) -> bool:
        return mention.get("number") == self.account or (
            self.bot_uuid is not None and mention.get("uuid") == self.bot_uuid
        )

    def _mentioned(self, data: JSON) -> bool:
        return any(isinstance(m, dict) and self._is_bot(m) for m in data.get("mentions") or [])

    def _without_mentions(self, text: str, data: JSON) -> str:
        spans = []
        for mention in data.get("mentions") or []:
            if isinstance(mention, dict) and self._is_bot(mention):
                start = _index(text, int(mention.get("start", 0)))
                end = _index(text, int(mention.get("start", 0)) + int(mention.get("length", 1)))
                spans.append((start, end))
        return strip_spans(text, spans)

    def _quoted(self, data: JSON, ids: set[str]) -> Quoted | None:
        quote = data.get("quote")
        if self.quote_max_chars == 0 or not isinstance(quote, dict):
            return None
        text = quote.get("text")
        if not isinstance(text, str) or not text:
            return None
        author = {quote.get("authorNumber"), quote.get("authorUuid"), quote.get("author")}
        if self.account in author or (self.bot_uuid is not None and self.bot_uuid in author):
            whose = "assistant"
        elif author & ids:
            whose = "user"
        else:
            whose = "other"
        cut = len(text) > self.quote_max_chars
        return Quoted(text[: self.quote_max_chars], whose, cut=cut)  # type: ignore[arg-type]


def _ids(envelope: JSON) -> set[str]:
    return {
        str(value)
        for value in (envelope.get("sourceNumber"), envelope.get("sourceUuid"))
        if isinstance(value, str) and value
    }


def _sync(envelope: JSON, ids: set[str]) -> Receipt | None:
    """Our own account's transcript of a message sent by another of its devices."""
    sync = envelope.get("syncMessage")
    sent = sync.get("sentMessage") if isinstance(sync, dict) else None
    if not isinstance(sent, dict) or not isinstance(sent.get("timestamp"), int):
        return None
    group = sent.get("groupInfo")
    chat = {
        str(v)
        for v in (sent.get("destinationNumber"), sent.get("destinationUuid"))
        if isinstance(v, str)
    }
    if isinstance(group, dict) and isinstance(group.get("groupId"), str):
        chat = {group["groupId"]}
    return Receipt(chat, [sent["timestamp"]]) if chat else None


def _index(text: str, units: int) -> int:
    """The index in ``text`` of an offset counted in UTF-16 code units."""
    seen = 0
    for index, ch in enumerate(text):
        if seen >= units:
            return index
        seen += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def _files(data: JSON) -> tuple[RemoteFile, ...]:
    files = []
    for item in data.get("attachments") or []:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        mime = str(item.get("contentType") or "") or None
        kind: FileKind = "document"
        if (mime or "").startswith("image/"):
            kind = "photo"
        elif (mime or "").startswith("audio/"):
            kind = "audio" if item.get("filename") else "voice"  # a voice note has no name
        size = item.get("size")
        files.append(
            RemoteFile(
                kind,
                item["id"],
                f"signal:{item['id']}",
                size if isinstance(size, int) else None,
                str(item.get("filename") or ""),
                mime,
            )
        )
    return tuple(files)
