"""Attachments on the real Synapse: an image and a text file in (through the homeserver's
authenticated media, into the model's request), a tool's image out as m.image."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.transcription_api import TranscriptionFake
from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from tests.telegram.test_tool_images import PNG, Drawer
from thalos_bot.channels import notices
from thalos_bot.config.models import Settings
from thalos_bot.config.transcription import TranscriptionSettings
from thalos_bot.domain.messages import DocumentBlock, ImageBlock, TextBlock
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_an_image_and_a_text_file_reach_the_model(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    provider = ScriptedProvider([[Say("a pixel")], [Say("a note")]])
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, provider),
        Human(synapse, alice) as human,
    ):
        room = await human.direct_chat(bot.user_id)
        await human.until(lambda h: h.joined(room, bot.user_id))
        image = await human.upload(PNG, "image/png", "dot.png")
        await human.send(
            room,
            {
                "msgtype": "m.image",
                "body": "what is this?",
                "filename": "dot.png",
                "url": image,
                "info": {"mimetype": "image/png", "size": len(PNG)},
            },
        )
        await human.until(lambda h: "a pixel" in h.bodies(room, bot.user_id))
        note = await human.upload(b"remember: milk\n", "text/plain", "todo.txt")
        await human.send(
            room,
            {
                "msgtype": "m.file",
                "body": "todo.txt",
                "url": note,
                "info": {"mimetype": "text/plain"},
            },
        )
        await human.until(lambda h: "a note" in h.bodies(room, bot.user_id))
    first, second = provider.requests
    blocks = first.messages[-1].content
    assert any(isinstance(b, ImageBlock) for b in blocks)
    assert any(isinstance(b, TextBlock) and "what is this?" in b.text for b in blocks)
    text = " ".join(b.text for b in second.messages[-1].content if isinstance(b, TextBlock))
    assert "remember: milk" in text or any(
        isinstance(b, DocumentBlock) for b in second.messages[-1].content
    )


async def test_a_tool_image_goes_out_as_m_image_after_the_answer(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    provider = ScriptedProvider([[Say("Drawing."), CallTool("draw__chart")], [Say("Here it is.")]])
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, provider) as running,
        Human(synapse, alice) as human,
    ):
        running.runtime.tools = Drawer()
        room = await human.direct_chat(bot.user_id)
        await human.until(lambda h: h.joined(room, bot.user_id))
        await human.say(room, "chart please")
        await human.until(
            lambda h: any(m.content["msgtype"] == "m.image" for m in h.shown(room, bot.user_id))
        )
        shown = human.shown(room, bot.user_id)
        url = shown[-1].content["url"]
        media = await human.download(url)
    assert [m.content["msgtype"] for m in shown] == ["m.text", "m.image"]
    assert shown[0].body == "Drawing.\n\nHere it is."
    assert shown[1].body == notices.tool_image("draw__chart", "image/png", len(PNG))
    assert media == PNG


async def test_a_voice_message_is_transcribed_and_the_person_sees_what_was_heard(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("THALOS_TRANSCRIPTION_API_KEY", "sk-transcribe-test")
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    with TranscriptionFake(api_key="sk-transcribe-test", transcript="what time is it") as stt:
        settings = Settings(transcription=TranscriptionSettings(base_url=stt.base_url))
        async with (
            running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, settings=settings),
            Human(synapse, alice) as human,
        ):
            room = await human.direct_chat(bot.user_id)
            await human.until(lambda h: h.joined(room, bot.user_id))
            voice = await human.upload(b"OggS" + b"\0" * 200, "audio/ogg", "Voice message.ogg")
            await human.send(
                room,
                {
                    "msgtype": "m.audio",
                    "body": "Voice message.ogg",
                    "url": voice,
                    "info": {"mimetype": "audio/ogg", "size": 204},
                    "org.matrix.msc3245.voice": {},
                },
            )
            await human.until(lambda h: "You said: what time is it" in h.bodies(room, bot.user_id))
            bodies = human.bodies(room, bot.user_id)
        calls = stt.requests
    assert bodies == ["🎤 what time is it", "You said: what time is it"]
    assert [call.filename for call in calls] == ["voice.ogg"]
