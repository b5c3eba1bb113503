"""Gateway dispatches as Discord might send them, wrong in any way: the strategies of the
Discord gateway fuzzer (tests/discord/test_gateway_fuzz.py, bench/fuzz.py ``discord``).

Each example is an event name and its ``d``: MESSAGE_CREATE, INTERACTION_CREATE (a
slash command or a button press), READY, RESUMED and the reaction events. Every field is
either its usual shape or any JSON (missing, mistyped, nested), texts may be huge or
hostile unicode, and ids may be the world's, any integer or a digit string longer than
Python reads. A READY keeps its ``session_id`` and ``resume_gateway_url`` and a RESUMED
stays an object: those are the gateway's framing, which discord.py reads before any
event's parser (the fuzzer is over the events, not the socket's protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tests.channels.fuzz_json import json_values, shaped
from thalos_bot.channels.notices import COMMAND_NAMES

NAMES = (
    "MESSAGE_CREATE",
    "INTERACTION_CREATE",
    "READY",
    "RESUMED",
    "MESSAGE_REACTION_ADD",
    "MESSAGE_REACTION_REMOVE",
    "MESSAGE_REACTION_REMOVE_ALL",
    "MESSAGE_REACTION_REMOVE_EMOJI",
)
HUGE_UNITS = ("a", " ", "\n", "<@{bot}> ", "|-|\n", "\u202e\u200b", "𝔘̴̧", "`", "#")
"""What a huge text repeats: plain, blank, line breaks, mentions of the bot, table rows,
bidi and zero-width marks, combining characters, fences, headings."""


@dataclass(frozen=True)
class Ids:
    """The world the events talk about (ids as Discord writes them: strings)."""

    bot: int
    owner: int
    stranger: int
    guild: int
    listed: int
    unlisted: int
    dm: int
    session_id: str
    gateway_url: str
    files_url: str
    """Where the fake serves attachments (nothing of a fuzz run leaves loopback)."""


def hostile_text(bot: int) -> Any:
    units = st.sampled_from([u.replace("{bot}", str(bot)) for u in HUGE_UNITS])
    huge = st.tuples(units, st.integers(1_000, 200_000)).map(lambda p: p[0] * p[1])
    mentioned = st.text(max_size=40).map(lambda t: f"<@{bot}> {t}")
    return st.text(max_size=60) | mentioned | huge


def snowflakes(*known: int) -> Any:
    return (
        st.sampled_from([str(k) for k in known])
        | st.integers(min_value=-(2**70), max_value=2**70).map(str)
        | st.integers(4_200, 6_000).map(lambda n: "9" * n)
        | st.integers()
    )


def user(ids: Ids) -> Any:
    return shaped(
        {
            "id": snowflakes(ids.owner, ids.stranger, ids.bot),
            "username": hostile_text(ids.bot),
            "discriminator": st.just("0"),
        },
        {
            "global_name": hostile_text(ids.bot) | st.none(),
            "avatar": st.none(),
            "bot": st.booleans(),
        },
    )


def message(ids: Ids, depth: int = 1) -> Any:
    optional: dict[str, Any] = {
        "guild_id": snowflakes(ids.guild),
        "member": shaped({"roles": st.just([]), "joined_at": st.just("2026-01-01T00:00:00Z")}),
        "mentions": st.lists(user(ids), max_size=3),
        "message_reference": shaped({"message_id": snowflakes(ids.owner)}),
        "attachments": st.lists(
            shaped(
                {
                    "id": snowflakes(ids.owner),
                    "filename": hostile_text(ids.bot),
                    "size": st.integers(),
                    "url": st.just(f"{ids.files_url}1/2/a.txt"),
                    "proxy_url": st.just(f"{ids.files_url}1/2/a.txt"),
                },
                {"content_type": st.text(max_size=30), "flags": st.integers()},
            ),
            max_size=2,
        ),
        "flags": st.integers(),
        "nonce": st.text(max_size=25) | st.integers(),
        "webhook_id": snowflakes(ids.owner),
        "thread": json_values,
        "components": json_values,
    }
    if depth > 0:
        optional["referenced_message"] = message(ids, depth - 1) | st.none()
    return shaped(
        {
            "id": snowflakes(ids.owner),
            "channel_id": snowflakes(ids.dm, ids.listed, ids.unlisted),
            "author": user(ids),
            "content": hostile_text(ids.bot),
            "timestamp": st.just("2026-01-01T00:00:00.000000+00:00"),
            "edited_timestamp": st.none(),
            "tts": st.booleans(),
            "mention_everyone": st.booleans(),
            "mention_roles": st.just([]),
            "embeds": st.just([]),
            "pinned": st.booleans(),
            "type": st.sampled_from([0, 19, 7]) | st.integers(),
        },
        optional,
    )


def interaction(ids: Ids) -> Any:
    command = shaped(
        {
            "id": snowflakes(ids.owner),
            "name": st.sampled_from(sorted(COMMAND_NAMES)) | st.text(max_size=20),
            "type": st.just(1),
        },
        {
            "options": st.lists(
                shaped(
                    {
                        "name": st.sampled_from(["agent", "code"]),
                        "type": st.just(3),
                        "value": hostile_text(ids.bot),
                    }
                ),
                max_size=2,
            )
        },
    )
    press = shaped(
        {"custom_id": st.text(max_size=100), "component_type": st.just(2)},
        {"values": json_values},
    )
    return shaped(
        {
            "id": snowflakes(ids.owner),
            "application_id": snowflakes(ids.bot),
            "type": st.sampled_from([2, 3, 1, 4, 5]) | st.integers(),
            "data": command | press,
            "channel_id": snowflakes(ids.dm, ids.listed, ids.unlisted),
            "token": st.text(min_size=1, max_size=80),
            "version": st.just(1),
        },
        {
            "channel": shaped({"id": snowflakes(ids.dm, ids.listed), "type": st.integers(0, 15)}),
            "guild_id": snowflakes(ids.guild),
            "member": shaped({"user": user(ids), "roles": st.just([])}),
            "user": user(ids),
            "message": message(ids, 0),
            "locale": st.text(max_size=10),
            "app_permissions": st.text(max_size=20),
            "entitlements": st.just([]),
            "context": st.integers(),
        },
    )


def ready(ids: Ids, bot_user: dict[str, Any]) -> Any:
    """A READY: the session's own id, resume URL and user, the rest any shape."""
    rest = shaped(
        {
            "v": st.just(10),
            "guilds": st.lists(
                shaped({"id": snowflakes(ids.guild), "unavailable": st.booleans()}), max_size=3
            ),
            "application": shaped({"id": snowflakes(ids.bot), "flags": st.integers()}),
        },
        {"private_channels": json_values, "session_type": st.text(max_size=10)},
    )
    framing = {
        "session_id": ids.session_id,
        "resume_gateway_url": ids.gateway_url,
        "user": bot_user,
    }
    return rest.map(lambda d: {**d, **framing} if isinstance(d, dict) else dict(framing))


def reaction(ids: Ids) -> Any:
    return shaped(
        {
            "user_id": snowflakes(ids.owner, ids.stranger),
            "channel_id": snowflakes(ids.dm, ids.listed),
            "message_id": snowflakes(ids.owner),
            "emoji": shaped(
                {"id": st.none() | snowflakes(ids.owner), "name": hostile_text(ids.bot)}
            ),
        },
        {
            "guild_id": snowflakes(ids.guild),
            "member": shaped({"user": user(ids), "roles": st.just([])}),
            "burst": st.booleans(),
            "type": st.integers(),
        },
    )


def dispatches(ids: Ids, bot_user: dict[str, Any]) -> Any:
    """(event name, its ``d``) for any of :data:`NAMES`."""
    resumed = st.dictionaries(st.text(max_size=10), json_values, max_size=3)
    return st.one_of(
        st.tuples(st.just("MESSAGE_CREATE"), message(ids)),
        st.tuples(st.just("INTERACTION_CREATE"), interaction(ids)),
        st.tuples(st.just("READY"), ready(ids, bot_user)),
        st.tuples(st.just("RESUMED"), resumed),
        st.tuples(st.sampled_from(NAMES[4:]), reaction(ids)),
    )


def plain_message(mid: int, channel: int, author: int, username: str, text: str) -> dict[str, Any]:
    """A well-formed MESSAGE_CREATE of ``text`` by ``author`` (the shape every fuzzed
    one departs from)."""
    return {
        "id": str(mid),
        "channel_id": str(channel),
        "author": {
            "id": str(author),
            "username": username,
            "discriminator": "0",
            "global_name": None,
            "avatar": None,
        },
        "content": text,
        "timestamp": "2026-01-01T00:00:00.000000+00:00",
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
    }
