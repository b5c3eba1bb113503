"""Attachments in encrypted rooms on the real Synapse: a file encrypted as Element
encrypts it (here by matrix-nio's implementation, written apart from the bot's) reaches
the model decrypted; a tool's image goes out encrypted and decrypts to what the tool
made; a file whose checksum does not match is refused with a notice; a voice answer is
Element's voice message (with its waveform), encrypted."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from nio.crypto.attachments import decrypt_attachment, encrypt_attachment

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.synapse import SynapseServer
from tests.media.transcribing import local_speaking
from tests.telegram.test_tool_images import PNG, Drawer
from thalos_bot.channels import notices
from thalos_bot.domain.messages import ImageBlock, TextBlock
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.speech.ogg import read_ogg_opus
from thalos_bot_matrix.attachments import UNREADABLE_FILE

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_encrypted_files_in_and_out(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    provider = ScriptedProvider(
        [[Say("a pixel")], [Say("Drawing."), CallTool("draw__chart")], [Say("Here it is.")]]
    )
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, provider, encryption=True
        ) as running:
            running.runtime.tools = Drawer()
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            ciphertext, keys = encrypt_attachment(PNG)
            url = await human.upload(ciphertext, "application/octet-stream", "dot.png")
            image = {
                "msgtype": "m.image",
                "body": "what is this?",
                "filename": "dot.png",
                "file": {**keys, "url": url},
                "info": {"mimetype": "image/png", "size": len(PNG)},
            }
            await human.send_encrypted(room, bot.user_id, image)
            await human.until(lambda h: "a pixel" in h.bodies(room, bot.user_id))
            # The same file with another file's checksum: refused, never decrypted.
            other, _ = encrypt_attachment(b"not the picture")
            forged = base64.b64encode(hashlib.sha256(other).digest()).decode().rstrip("=")
            tampered = {**image, "file": {**keys, "url": url, "hashes": {"sha256": forged}}}
            await human.send_encrypted(room, bot.user_id, tampered)
            await human.until(lambda h: UNREADABLE_FILE in h.bodies(room, bot.user_id))
            await human.say_encrypted(room, bot.user_id, "chart please")
            await human.until(
                lambda h: any(
                    m.content.get("msgtype") == "m.image" for m in h.shown(room, bot.user_id)
                )
            )
            (sent,) = [
                m for m in human.shown(room, bot.user_id) if m.content.get("msgtype") == "m.image"
            ]
            file = sent.content["file"]
            stored = await human.download(file["url"])
    first = provider.requests[0].messages[-1].content
    assert any(isinstance(b, ImageBlock) for b in first)
    assert any(isinstance(b, TextBlock) and "what is this?" in b.text for b in first)
    assert len(provider.requests) == 3, "the tampered file reached no model"
    assert "url" not in sent.content, "an encrypted room gets no plaintext link"
    assert sent.body == notices.tool_image("draw__chart", "image/png", len(PNG))
    assert stored != PNG, "the homeserver keeps only ciphertext"
    assert decrypt_attachment(stored, file["key"]["k"], file["hashes"]["sha256"], file["iv"]) == PNG
    events = [e for e in human.events[room] if e["sender"] == bot.user_id]
    assert all(e.get("encrypted") for e in events if e["type"] == "m.room.message")


VOICE_ON = "Spoken answers here: on."


async def test_a_voice_answer_in_an_encrypted_room(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Element's voice message: ``m.audio`` with the voice flag, its length and waveform,
    the file encrypted like any attachment there."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        async with running_bot(
            synapse,
            bot,
            [alice.user_id],
            monkeypatch,
            tmp_path,
            ScriptedProvider([[Say("Hello **there**.\n\n```\ncode\n```")]]),
            encryption=True,
            speaking=local_speaking(),
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say_encrypted(room, bot.user_id, "/voice on")
            await human.until(
                lambda h: any(b.startswith(VOICE_ON) for b in h.bodies(room, bot.user_id))
            )
            await human.say_encrypted(room, bot.user_id, "speak")
            await human.until(
                lambda h: any(
                    m.content.get("msgtype") == "m.audio" for m in h.shown(room, bot.user_id)
                )
            )
            shown = human.shown(room, bot.user_id)
            (sent,) = [m for m in shown if m.content.get("msgtype") == "m.audio"]
            file = sent.content["file"]
            stored = await human.download(file["url"])
    assert [m.content.get("msgtype") for m in shown][-2:] == ["m.text", "m.audio"], "text first"
    content = sent.content
    assert "url" not in content, "an encrypted room gets no plaintext link"
    assert content["org.matrix.msc3245.voice"] == {}
    audio = decrypt_attachment(stored, file["key"]["k"], file["hashes"]["sha256"], file["iv"])
    length = read_ogg_opus(audio).duration
    milliseconds = content["org.matrix.msc1767.audio"]["duration"]
    assert milliseconds == content["info"]["duration"] == round(length * 1000)
    waveform = content["org.matrix.msc1767.audio"]["waveform"]
    assert waveform
    assert all(isinstance(level, int) and 0 <= level <= 1024 for level in waveform)
    assert content["info"]["mimetype"] == "audio/ogg"
    assert content["body"] == notices.voice_clip(1, 1)
