"""Attachments in encrypted rooms on the real Synapse: a file encrypted as Element
encrypts it (here by matrix-nio's implementation, written apart from the bot's) reaches
the model decrypted; a tool's image goes out encrypted and decrypts to what the tool
made; a file whose checksum does not match is refused with a notice."""

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
from tests.telegram.test_tool_images import PNG, Drawer
from thalos_bot.channels import notices
from thalos_bot.domain.messages import ImageBlock, TextBlock
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot_matrix.intake import UNREADABLE_FILE

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
