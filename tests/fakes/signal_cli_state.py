"""What the fake signal-cli daemon knows: the people, the bot's account, the groups,
every message in every chat (as the people's phones show them), attachments, and the
envelopes waiting for the account's event stream. Shapes follow signal-cli's JSON
output (its ``Json*`` records: envelope, dataMessage, receiptMessage, syncMessage)."""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
MENTION = "\ufffc"


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    number: str
    uuid: str

    def ids(self) -> set[str]:
        return {self.number, self.uuid}


@dataclass
class Message:
    timestamp: int
    author: Person
    text: str
    styles: list[tuple[int, int, str]] = field(default_factory=list)
    attachments: list[JSON] = field(default_factory=list)
    quote: int | None = None
    edits: int = 0
    voice: bool = False
    """Sent with signal-cli's ``voiceNote`` (0.14.2+): shown as a voice message."""


@dataclass
class Chat:
    key: str
    """A person's UUID (a one-to-one chat with the bot) or a group id."""
    members: list[Person]
    messages: list[Message] = field(default_factory=list)

    def find(self, timestamp: int) -> Message | None:
        return next((m for m in self.messages if m.timestamp == timestamp), None)


class World:
    def __init__(self) -> None:
        self.bot = _person("bot", "+4915100000001")
        self.user = _person("Ana", "+4915100000002")
        self.stranger = _person("Eve", "+4915100000003")
        self.people = {p.uuid: p for p in (self.user, self.stranger)}
        self.group_id = base64.b64encode(uuid.uuid4().bytes * 2).decode("ascii")
        self.chats: dict[str, Chat] = {
            self.group_id: Chat(self.group_id, [self.bot, self.user, self.stranger])
        }
        self.attachments: dict[str, tuple[bytes, str, str]] = {}
        """id -> (data, content type, the chat it was sent in)."""
        self.untrusted: set[str] = set()
        """People whose safety number changed: sends to them fail until trusted."""
        self._last = 0

    def stamp(self) -> int:
        """A new timestamp (ms since the epoch, strictly increasing)."""
        self._last = max(time.time_ns() // 1_000_000, self._last + 1)
        return self._last

    def person(self, recipient: str) -> Person | None:
        return next((p for p in self.people.values() if recipient in p.ids()), None)

    def dm(self, person: Person) -> Chat:
        return self.chats.setdefault(person.uuid, Chat(person.uuid, [self.bot, person]))

    def envelope(self, author: Person, body: JSON) -> JSON:
        return {
            "envelope": {
                "source": author.number,
                "sourceNumber": author.number,
                "sourceUuid": author.uuid,
                "sourceName": author.name,
                "sourceDevice": 1,
                "timestamp": body.get("timestamp") or self.stamp(),
                "serverReceivedTimestamp": self.stamp(),
                "serverDeliveredTimestamp": self.stamp(),
                **{k: v for k, v in body.items() if k != "timestamp"},
            },
            "account": self.bot.number,
        }

    def data_message(
        self,
        author: Person,
        text: str,
        chat: Chat,
        *,
        mention: bool = False,
        attachments: list[tuple[bytes, str, str | None]] = (),  # type: ignore[assignment]
        reaction: JSON | None = None,
    ) -> JSON:
        timestamp = self.stamp()
        mentions = []
        if mention:
            text = f"{MENTION} {text}"
            mentions.append(
                {"name": self.bot.number, "number": self.bot.number, "uuid": self.bot.uuid}
                | {"start": 0, "length": 1}
            )
        stored = [self._attachment(data, kind, name, chat) for data, kind, name in attachments]
        data: JSON = {
            "timestamp": timestamp,
            "message": text if reaction is None else None,
            "expiresInSeconds": 0,
            "viewOnce": False,
        }
        if mentions:
            data["mentions"] = mentions
        if stored:
            data["attachments"] = stored
        if reaction is not None:
            data["reaction"] = reaction
        if chat.key == self.group_id:
            data["groupInfo"] = {
                "groupId": self.group_id,
                "groupName": "Household",
                "revision": 3,
                "type": "DELIVER",
            }
        if reaction is None:
            chat.messages.append(Message(timestamp, author, text, attachments=stored))
        return self.envelope(author, {"timestamp": timestamp, "dataMessage": data})

    def receipt(self, author: Person, timestamps: list[int]) -> JSON:
        return self.envelope(
            author,
            {
                "receiptMessage": {
                    "when": self.stamp(),
                    "isDelivery": True,
                    "isRead": False,
                    "isViewed": False,
                    "timestamps": timestamps,
                }
            },
        )

    def _attachment(self, data: bytes, kind: str, name: str | None, chat: Chat) -> JSON:
        ident = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        ident = f"{ident}.{kind.rsplit('/', maxsplit=1)[-1]}"
        self.attachments[ident] = (data, kind, chat.key)
        return {
            "contentType": kind,
            "filename": name,
            "id": ident,
            "size": len(data),
            "width": None,
            "height": None,
            "caption": None,
            "uploadTimestamp": self.stamp(),
        }


def _person(name: str, number: str) -> Person:
    return Person(name, number, str(uuid.uuid4()))
