"""Direct chats with the Matrix channel on a real Synapse: invites, text, streaming as
one message edited in place, Markdown as HTML, commands, strangers."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_direct_chat_streams_one_message_then_edits_it_to_the_final_markdown(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"), displayname="Thalos")
    alice = await register(synapse, unique("alice"))
    gate = anyio.Event()
    provider = ScriptedProvider(
        [[Say("Here is **bold** and `code`"), Await(gate.wait), Say(":\n\n- one\n- two")]]
    )
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, provider),
        Human(synapse, alice) as human,
    ):
        room = await human.direct_chat(bot.user_id)
        await human.until(lambda h: h.joined(room, bot.user_id))
        await human.say(room, "show me markdown")
        first = await human.until(lambda h: h.shown(room, bot.user_id))
        assert len(first) == 1
        assert first[0].body.startswith("Here is **bold**")
        gate.set()
        final_text = "Here is **bold** and `code`:\n\n- one\n- two"
        done = await human.until(
            lambda h: [m for m in h.shown(room, bot.user_id) if m.body == final_text]
        )
        shown = human.shown(room, bot.user_id)
    assert len(shown) == 1, "one message, edited in place"
    assert shown[0].event_id == done[0].event_id
    assert shown[0].edits >= 1
    content = shown[0].content
    assert content["format"] == "org.matrix.custom.html"
    assert "<strong>bold</strong>" in content["formatted_body"]
    assert "<code>code</code>" in content["formatted_body"]
    assert "<li>one</li>" in content["formatted_body"]
    assert content["body"] == final_text


async def test_a_strangers_invite_is_ignored_and_an_allowed_users_joined(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path),
        Human(synapse, alice) as friend,
        Human(synapse, mallory) as stranger,
    ):
        theirs = await stranger.direct_chat(bot.user_id)
        ours = await friend.direct_chat(bot.user_id)
        # The bot handles invites in sync order; once it joined the later room, it has
        # seen (and ignored) the stranger's earlier invite.
        await friend.until(lambda h: h.joined(ours, bot.user_id))
        await friend.say(ours, "hello")
        await friend.until(lambda h: h.bodies(ours, bot.user_id))
        await stranger.sync_once()
        members = await stranger.call("GET", f"/_matrix/client/v3/rooms/{theirs}/members")
    states = {e["state_key"]: e["content"]["membership"] for e in members["chunk"]}
    assert states[bot.user_id] == "invite", "never joined the stranger's room"
    assert stranger.bodies(theirs, bot.user_id) == []


async def test_a_strangers_message_in_an_allowed_room_is_not_answered(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path),
        Human(synapse, alice) as friend,
        Human(synapse, mallory) as stranger,
    ):
        room = await friend.direct_chat(bot.user_id)
        await friend.until(lambda h: h.joined(room, bot.user_id))
        await friend.call(
            "POST", f"/_matrix/client/v3/rooms/{room}/invite", {"user_id": mallory.user_id}
        )
        await stranger.join(room)
        await stranger.say(room, "answer me")
        await friend.say(room, "and me")
        # Answers go out in the order the messages came; an answer to the stranger
        # would come before this one.
        await friend.until(lambda h: "You said: and me" in h.bodies(room, bot.user_id))
        answers = friend.bodies(room, bot.user_id)
    assert answers == ["You said: and me"]


async def test_commands_work_as_typed(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path),
        Human(synapse, alice) as human,
    ):
        room = await human.direct_chat(bot.user_id)
        await human.until(lambda h: h.joined(room, bot.user_id))
        await human.say(room, "/help")
        shown = await human.until(lambda h: h.shown(room, bot.user_id))
    assert "/new" in shown[0].body
    assert shown[0].content["msgtype"] == "m.notice"


async def test_model_text_naming_the_room_or_a_person_notifies_nobody(
    push_synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``@room``, a user id and a display name in an answer (a prompt injection's
    mass mention) are shown as text; the homeserver's push rules highlight nothing,
    since every message and edit says it mentions nobody (``m.mentions``)."""
    synapse = push_synapse
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"), displayname="Alice")
    hostile = f"@room look, {alice.user_id} and Alice: urgent"
    provider = ScriptedProvider([[Say("Streaming @room first, "), Say(hostile)]])
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, provider),
        Human(synapse, alice) as human,
    ):
        room = await human.direct_chat(bot.user_id)
        await human.until(lambda h: h.joined(room, bot.user_id))
        await human.say(room, "hi")
        await human.until(lambda h: any("urgent" in b for b in h.bodies(room, bot.user_id)))
        everything = (await human.call("GET", "/_matrix/client/v3/notifications"))["notifications"]
        highlights = await human.call(
            "GET", "/_matrix/client/v3/notifications", params={"only": "highlight"}
        )
    from_bot = [n for n in highlights["notifications"] if n["event"]["sender"] == bot.user_id]
    assert from_bot == []
    assert everything, "the answers notified Alice (as messages do), without a highlight"
