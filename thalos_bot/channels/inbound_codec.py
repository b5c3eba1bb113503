"""An :class:`InboundMessage` as a row of the shared inbox can hold it (JSON), and back.

What a connection's owner receives is stored before any turn runs, so that the replica
that runs it (possibly another, after the owner died) reads the same message: the
sender's security context, the text, what it replies to, and its attachments (their
bytes in base64: a channel has already downloaded and checked them, within the media
limits). The ``handled`` event is the reader's own and is not stored.
"""

from __future__ import annotations

import base64
from datetime import datetime
from types import MappingProxyType
from typing import Any

from thalos_bot.channels.ports import InboundMessage, Quoted, Sender
from thalos_bot.domain.attachments import Attachment, Inbound, Reattach
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext


def encode(message: InboundMessage) -> dict[str, Any]:
    context = message.sender.context
    quoted = message.reply_to
    return {
        "channel_id": message.channel_id,
        "conversation_id": message.conversation_id,
        "sender": {
            "id": context.id,
            "roles": sorted(context.roles),
            "claims": dict(context.claims),
            "display": message.sender.display,
            "user": message.sender.user,
        },
        "text": message.text,
        "received_at": message.received_at.isoformat(),
        "attachments": [_attachment(item) for item in message.attachments],
        "reply_to": None
        if quoted is None
        else {
            "text": quoted.text,
            "author": quoted.author,
            "partial": quoted.partial,
            "cut": quoted.cut,
        },
        "message_ref": message.message_ref,
        "voice": message.voice,
    }


def decode(data: dict[str, Any]) -> InboundMessage:
    sender = data["sender"]
    quoted = data.get("reply_to")
    return InboundMessage(
        channel_id=ChannelId(data["channel_id"]),
        conversation_id=ConversationId(data["conversation_id"]),
        sender=Sender(
            SecurityContext(
                str(sender["id"]),
                frozenset(sender["roles"]),
                MappingProxyType({str(k): str(v) for k, v in sender["claims"].items()}),
            ),
            str(sender["display"]),
            str(sender["user"]),
        ),
        text=str(data["text"]),
        received_at=datetime.fromisoformat(data["received_at"]),
        attachments=tuple(_inbound(item) for item in data["attachments"]),
        reply_to=None
        if quoted is None
        else Quoted(quoted["text"], quoted["author"], bool(quoted["partial"]), bool(quoted["cut"])),
        message_ref=data.get("message_ref"),
        voice=bool(data.get("voice", False)),
    )


def _attachment(item: Inbound) -> dict[str, Any]:
    if isinstance(item, Reattach):
        return {"reattach": item.origin}
    return {
        "kind": item.kind,
        "media_type": item.media_type,
        "data": base64.b64encode(item.data).decode("ascii"),
        "name": item.name,
        "origin": item.origin,
    }


def _inbound(item: dict[str, Any]) -> Inbound:
    if "reattach" in item:
        return Reattach(str(item["reattach"]))
    return Attachment(
        item["kind"],
        str(item["media_type"]),
        base64.b64decode(item["data"]),
        str(item["name"]),
        str(item["origin"]),
    )
