"""A listed group room: the bot answers allowed users only when mentioned (m.mentions,
or a pill from a client without m.mentions) or replied to; an unlisted room's invite is
not taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_listed_room_is_answered_only_when_the_bot_is_addressed(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"), displayname="Thalos")
    alice = await register(synapse, unique("alice"))
    bob = await register(synapse, unique("bob"))
    async with Human(synapse, alice) as human, Human(synapse, bob) as other:
        room = await human.group([bot.user_id, bob.user_id])
        await other.join(room)
        async with running_bot(
            synapse, bot, [alice.user_id, bob.user_id], monkeypatch, tmp_path, rooms=[room]
        ):
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say(room, "just chatting", mentions=[])
            mentioned = await human.say(room, "Thalos: first", mentions=[bot.user_id])
            await human.until(lambda h: "You said: first" in h.bodies(room, bot.user_id))
            answer = human.shown(room, bot.user_id)[0]
            # A pill, from a client that does not set m.mentions.
            await other.send(
                room,
                {
                    "msgtype": "m.text",
                    "body": "Thalos: second",
                    "format": "org.matrix.custom.html",
                    "formatted_body": (
                        f'<a href="https://matrix.to/#/{bot.user_id}">Thalos</a>: second'
                    ),
                },
            )
            await human.until(lambda h: "You said: second" in h.bodies(room, bot.user_id))
            await human.say(room, "third", reply_to=answer.event_id, mentions=[])
            # The echo model repeats the quoted answer ahead of the words.
            await human.until(
                lambda h: any(b.endswith("third") for b in h.bodies(room, bot.user_id))
            )
            bodies = human.bodies(room, bot.user_id)
            first_event = next(e for e in human.events[room] if e["event_id"] == answer.event_id)
    assert bodies[:2] == ["You said: first", "You said: second"]
    assert len(bodies) == 3
    assert bodies[2].startswith("You said: ")
    assert "You said: first" in bodies[2], "the reply quotes the answer it replies to"
    # In a group an answer replies to the message it answers.
    assert first_event["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == mentioned


async def test_an_unlisted_rooms_invite_is_not_taken(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path),
        Human(synapse, alice) as human,
    ):
        group = await human.group([bot.user_id])
        direct = await human.direct_chat(bot.user_id)
        await human.until(lambda h: h.joined(direct, bot.user_id))
        members = await human.call("GET", f"/_matrix/client/v3/rooms/{group}/members")
    states = {e["state_key"]: e["content"]["membership"] for e in members["chunk"]}
    assert states[bot.user_id] == "invite"
