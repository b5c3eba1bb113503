"""The Discord fake's world: users, guilds, channels, messages, interactions, commands.

Every method runs under the fake's lock. Messages are kept per channel in creation
order; ``nonces`` remembers, per author, the nonces of the last few minutes, so that a
create with ``enforce_nonce`` returns the earlier message instead of posting again.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.discord_wire import (
    ALREADY_ACKNOWLEDGED,
    EMPTY_MESSAGE,
    NOT_AUTHOR,
    UNKNOWN_CHANNEL,
    UNKNOWN_INTERACTION,
    UNKNOWN_MESSAGE,
    Snowflakes,
    check_components,
    check_content,
    check_nonce,
    form_error,
    iso_now,
    pings,
)

NONCE_WINDOW = 300.0
"""Seconds a nonce is remembered for ``enforce_nonce`` ("the past few minutes")."""
GUILD_TEXT, DM, PUBLIC_THREAD = 0, 1, 11
COMMAND_NAME = re.compile(r"^[-_\w]{1,32}$")


@dataclass
class Interaction:
    id: int
    token: str
    kind: int
    user_id: int
    channel_id: int
    message_id: int | None
    created: float
    answered: int | None = None
    """The callback type it was answered with (None: not yet)."""


@dataclass
class World:
    bot: dict[str, Any]
    application_id: int
    cdn_base: str = ""
    ids: Snowflakes = field(default_factory=Snowflakes)
    users: dict[int, dict[str, Any]] = field(default_factory=dict)
    guilds: dict[int, dict[str, Any]] = field(default_factory=dict)
    channels: dict[int, dict[str, Any]] = field(default_factory=dict)
    messages: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    nonces: dict[tuple[int, str], tuple[float, dict[str, Any]]] = field(default_factory=dict)
    interactions: dict[int, Interaction] = field(default_factory=dict)
    commands: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    interaction_deadline: float = 3.0
    pinged: list[tuple[int, bool, list[int], list[int]]] = field(default_factory=list)
    """Messages that pinged someone: (message id, everyone or here, user ids, role ids)."""
    history: dict[int, list[str]] = field(default_factory=dict)
    """Every text a message has shown (created, then each edit), by message id."""

    def __post_init__(self) -> None:
        self.users[int(self.bot["id"])] = self.bot

    # -- people and places -------------------------------------------------------------

    def add_user(self, name: str) -> int:
        uid = self.ids.next()
        self.users[uid] = {
            "id": str(uid),
            "username": name,
            "global_name": name.title(),
            "discriminator": "0",
            "avatar": None,
            "bot": False,
        }
        return uid

    def add_guild(self, name: str) -> int:
        gid = self.ids.next()
        self.guilds[gid] = {"id": str(gid), "name": name, "channels": []}
        return gid

    def add_channel(self, guild_id: int, name: str) -> int:
        cid = self.ids.next()
        channel = {
            "id": str(cid),
            "type": GUILD_TEXT,
            "guild_id": str(guild_id),
            "name": name,
            "position": len(self.guilds[guild_id]["channels"]),
            "permission_overwrites": [],
            "nsfw": False,
            "parent_id": None,
            "last_message_id": None,
        }
        self.channels[cid] = channel
        self.guilds[guild_id]["channels"].append(cid)
        return cid

    def dm_channel(self, user_id: int) -> dict[str, Any]:
        for channel in self.channels.values():
            if channel["type"] == DM and channel["recipients"][0]["id"] == str(user_id):
                return channel
        if user_id not in self.users:
            raise form_error(
                "recipient_id", "NUMBER_TYPE_COERCE", f'Value "{user_id}" is not snowflake.'
            )
        cid = self.ids.next()
        channel = {
            "id": str(cid),
            "type": DM,
            "recipients": [self.users[user_id]],
            "last_message_id": None,
        }
        self.channels[cid] = channel
        return channel

    def channel(self, channel_id: int) -> dict[str, Any]:
        channel = self.channels.get(channel_id)
        if channel is None:
            raise UNKNOWN_CHANNEL
        return channel

    def guild_payload(self, guild_id: int) -> dict[str, Any]:
        guild = self.guilds[guild_id]
        channels = [
            {k: v for k, v in self.channels[c].items() if k != "guild_id"}
            for c in guild["channels"]
        ]
        threads = [
            c
            for c in self.channels.values()
            if c["type"] == PUBLIC_THREAD and c.get("guild_id") == str(guild_id)
        ]
        return {
            "id": str(guild_id),
            "name": guild["name"],
            "unavailable": False,
            "owner_id": str(next(iter(self.users))),
            "member_count": len(self.users),
            "large": False,
            "joined_at": iso_now(),
            "features": [],
            "emojis": [],
            "stickers": [],
            "roles": [
                {
                    "id": str(guild_id),
                    "name": "@everyone",
                    "permissions": "1024",
                    "position": 0,
                    "color": 0,
                    "hoist": False,
                    "managed": False,
                    "mentionable": False,
                    "flags": 0,
                }
            ],
            "channels": channels,
            "threads": threads,
            "members": [],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "premium_tier": 0,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "system_channel_flags": 0,
            "preferred_locale": "en-US",
        }

    # -- messages --------------------------------------------------------------------

    def message_of(self, channel_id: int, message_id: int) -> dict[str, Any]:
        for message in self.messages.get(channel_id, []):
            if message["id"] == str(message_id):
                return message
        raise UNKNOWN_MESSAGE

    def post(
        self,
        channel_id: int,
        author: dict[str, Any],
        body: dict[str, Any],
        attachments: list[dict[str, Any]] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Create a message; returns it and whether it is new (False: ``enforce_nonce``
        found the author's earlier message with the same nonce)."""
        channel = self.channel(channel_id)
        check_content(body)
        nonce = check_nonce(body)
        components = check_components(body.get("components"))
        content = body.get("content") or ""
        if not content and not attachments and not body.get("embeds") and not components:
            raise EMPTY_MESSAGE
        now = time.monotonic()
        key = (int(author["id"]), nonce or "")
        if nonce is not None and body.get("enforce_nonce"):
            earlier = self.nonces.get(key)
            if earlier is not None and now - earlier[0] < NONCE_WINDOW:
                return earlier[1], False
        mid = self.ids.next()
        reference = body.get("message_reference")
        message: dict[str, Any] = {
            "id": str(mid),
            "channel_id": str(channel_id),
            "author": author,
            "content": content,
            "timestamp": iso_now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": body.get("embeds") or [],
            "components": components,
            "pinned": False,
            "type": 0 if reference is None else 19,
            "flags": body.get("flags", 0) & (1 << 13),  # IS_VOICE_MESSAGE, as sent
        }
        if nonce is not None:
            message["nonce"] = body["nonce"]
        if "guild_id" in channel:
            message["guild_id"] = channel["guild_id"]
        if reference is not None:
            referenced = self.message_of(
                int(reference.get("channel_id", channel_id)), int(reference["message_id"])
            )
            message["message_reference"] = {
                "message_id": referenced["id"],
                "channel_id": str(channel_id),
            }
            message["referenced_message"] = {
                k: v for k, v in referenced.items() if k != "referenced_message"
            }
        self._mention(message, body.get("allowed_mentions"))
        self.messages.setdefault(channel_id, []).append(message)
        self.history[mid] = [content]
        channel["last_message_id"] = str(mid)
        if nonce is not None:
            self.nonces[key] = (now, message)
        return message, True

    def edit(self, channel_id: int, message_id: int, body: dict[str, Any]) -> dict[str, Any]:
        self.channel(channel_id)
        message = self.message_of(channel_id, message_id)
        if message["author"]["id"] != self.bot["id"]:
            raise NOT_AUTHOR
        check_content(body)
        if "content" in body:
            message["content"] = body["content"] or ""
            self._mention(message, body.get("allowed_mentions"))
        if "components" in body:
            message["components"] = check_components(body["components"])
        if (
            not message["content"]
            and not message["attachments"]
            and not message["embeds"]
            and not message["components"]
        ):
            raise EMPTY_MESSAGE
        message["edited_timestamp"] = iso_now()
        self.history.setdefault(message_id, []).append(message["content"])
        return message

    def _mention(self, message: dict[str, Any], allowed: Any) -> None:
        """Who the message pings (``mention_everyone``, ``mentions``, ``mention_roles``),
        as Discord records it; every ping is also kept in :attr:`pinged`."""
        everyone, users, roles = pings(message["content"], allowed)
        message["mention_everyone"] = everyone
        message["mentions"] = [self.users[u] for u in users if u in self.users]
        message["mention_roles"] = [str(r) for r in roles]
        if everyone or users or roles:
            self.pinged.append((int(message["id"]), everyone, users, roles))

    def texts(self, channel_id: int) -> list[str]:
        """The bot's messages in the channel, oldest first."""
        return [
            m["content"]
            for m in self.messages.get(channel_id, [])
            if m["author"]["id"] == self.bot["id"]
        ]

    # -- interactions -------------------------------------------------------------------

    def interaction(self, interaction_id: int, token: str) -> Interaction:
        found = self.interactions.get(interaction_id)
        if found is None or found.token != token:
            raise UNKNOWN_INTERACTION
        return found

    def answer(self, interaction_id: int, token: str, kind: int) -> Interaction:
        found = self.interaction(interaction_id, token)
        if found.answered is not None:
            raise ALREADY_ACKNOWLEDGED
        if time.monotonic() - found.created > self.interaction_deadline:
            raise UNKNOWN_INTERACTION
        if kind in {6, 7} and found.kind != 3:
            raise form_error(
                "type",
                "INTERACTION_RESPONSE_TYPE_INVALID",
                "Interaction response type is invalid for this interaction",
            )
        found.answered = kind
        return found

    # -- application commands -----------------------------------------------------------

    def overwrite_commands(self, commands: Any) -> list[dict[str, Any]]:
        if not isinstance(commands, list):
            raise form_error(
                "_root", "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType"
            )
        names: set[str] = set()
        stored = []
        for i, command in enumerate(commands):
            name = command.get("name", "")
            if not isinstance(name, str) or not COMMAND_NAME.match(name) or name != name.lower():
                raise form_error(
                    f"{i}.name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
                )
            description = command.get("description", "")
            if command.get("type", 1) == 1 and not 1 <= len(description) <= 100:
                raise form_error(
                    f"{i}.description",
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                )
            if name in names:
                raise form_error(
                    f"{i}.name",
                    "APPLICATION_COMMANDS_DUPLICATE_NAME",
                    "Application command names must be unique",
                )
            names.add(name)
            stored.append(
                {
                    **command,
                    "id": str(self.ids.next()),
                    "application_id": str(self.application_id),
                    "version": str(self.ids.next()),
                    "type": command.get("type", 1),
                    "default_member_permissions": command.get("default_member_permissions"),
                    "dm_permission": command.get("dm_permission", True),
                    "nsfw": command.get("nsfw", False),
                }
            )
        self.commands = stored
        return stored
