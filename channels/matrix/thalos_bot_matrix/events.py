"""Reading Matrix events: what a message says, whom it mentions, what it replies to.
Every field is checked for its type: a malformed event reads as nothing, never raises.
"""

from __future__ import annotations

import re
from itertools import dropwhile
from typing import Any
from urllib.parse import unquote

JSON = dict[str, Any]

MEDIA_TYPES = frozenset({"m.image", "m.file", "m.audio"})
TEXT_TYPES = frozenset({"m.text", "m.emote"})
VOICE_FLAG = "org.matrix.msc3245.voice"
"""Marks an ``m.audio`` as a voice message (Element's), both ways."""
_PILL = re.compile(r"https://matrix\.to/#/([^\"'>?]+)")


def content_of(event: JSON) -> JSON:
    content = event.get("content")
    return content if isinstance(content, dict) else {}


def text_field(content: JSON, key: str) -> str:
    value = content.get(key)
    return value if isinstance(value, str) else ""


def relation(content: JSON) -> JSON:
    relates = content.get("m.relates_to")
    return relates if isinstance(relates, dict) else {}


def reply_target(content: JSON) -> str | None:
    """The event this message replies to (a thread's fallback reply counts too)."""
    reply = relation(content).get("m.in_reply_to")
    if isinstance(reply, dict):
        target = reply.get("event_id")
        if isinstance(target, str) and target:
            return target
    return None


def reaction(content: JSON) -> tuple[str, str] | None:
    """``(target event, key)`` of an ``m.reaction`` (an ``m.annotation``)."""
    relates = relation(content)
    target, key = relates.get("event_id"), relates.get("key")
    if relates.get("rel_type") != "m.annotation":
        return None
    if isinstance(target, str) and isinstance(key, str):
        return target, key
    return None


def latest_body(event: JSON) -> str:
    """The text a client shows for ``event``: its latest edit's, which the homeserver
    bundles in ``unsigned["m.relations"]["m.replace"]`` (the event's own content stays as
    first sent), else its own."""
    unsigned = event.get("unsigned")
    relations = unsigned.get("m.relations") if isinstance(unsigned, dict) else None
    edit = relations.get("m.replace") if isinstance(relations, dict) else None
    if isinstance(edit, dict):
        new = content_of(edit).get("m.new_content")
        if isinstance(new, dict) and isinstance(new.get("body"), str):
            return str(new["body"])
    return text_field(content_of(event), "body")


def strip_reply_fallback(body: str) -> str:
    """A reply's ``body`` may start with the quoted lines (``> …``) and a blank line."""
    if not body.startswith(">"):
        return body
    rest = list(dropwhile(lambda line: line.startswith(">"), body.split("\n")))
    return "\n".join(rest[1:] if rest and rest[0] == "" else rest)


def mentions(content: JSON, me: str, displayname: str | None) -> bool:
    """Does the message address ``me``: ``m.mentions.user_ids``, a pill (a matrix.to link
    to ``me`` in ``formatted_body``), or, from a client that sets neither, ``me`` or the
    display name in the text."""
    listed = content.get("m.mentions")
    if isinstance(listed, dict):
        ids = listed.get("user_ids")
        # A client that sets m.mentions says whom it mentions: trust it alone.
        return isinstance(ids, list) and me in ids
    html = text_field(content, "formatted_body")
    if any(unquote(found) == me for found in _PILL.findall(html)):
        return True
    body = strip_reply_fallback(text_field(content, "body")).lower()
    return me.lower() in body or (displayname is not None and displayname.lower() in body)


def without_mention(text: str, me: str, displayname: str | None) -> str:
    """The text with a leading address (``Thalos: …``, ``@thalos:server …``) removed."""
    for name in (me, displayname):
        if not name:
            continue
        pattern = re.compile(rf"^\s*{re.escape(name)}\s*[:,]?\s*", re.IGNORECASE)
        stripped = pattern.sub("", text, count=1)
        if stripped != text:
            return stripped
    return text


def rooms_in(batch: JSON, section: str) -> list[tuple[str, JSON]]:
    """The rooms of a sync batch's ``rooms.<section>`` (``invite``, ``join``)."""
    rooms = batch.get("rooms")
    part = rooms.get(section) if isinstance(rooms, dict) else None
    items = part.items() if isinstance(part, dict) else []
    return [(r, room) for r, room in items if isinstance(r, str) and isinstance(room, dict)]


def events_in(room: JSON, *sections: str) -> list[JSON]:
    """The events of a synced room's ``sections`` (``state``, ``timeline``), in order."""
    found: list[JSON] = []
    for section in sections:
        part = room.get(section)
        events = part.get("events") if isinstance(part, dict) else None
        found += [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []
    return found


def invite_sender(room: JSON, me: str) -> tuple[str | None, bool, bool]:
    """Who invited ``me`` to a room (from its ``invite_state``), whether the invite marks
    it a direct chat, and whether the room is encrypted."""
    sender: str | None = None
    direct = encrypted = False
    for event in events_in(room, "invite_state"):
        kind = event.get("type")
        if kind == "m.room.encryption":
            encrypted = True
        if kind == "m.room.member" and event.get("state_key") == me:
            content = content_of(event)
            if content.get("membership") == "invite":
                who = event.get("sender")
                sender = who if isinstance(who, str) else None
                direct = content.get("is_direct") is True
    return sender, direct, encrypted
