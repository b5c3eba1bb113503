"""The fakes for files and transcription refuse what the real services refuse."""

from __future__ import annotations

import httpx2
import pytest
from telegram import Bot
from telegram.error import BadRequest

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.transcription_api import TranscriptionFake

TOKEN = "123456:TEST-files"


@pytest.mark.anyio
async def test_get_file_refuses_unknown_ids_and_files_over_20_mb() -> None:
    with TelegramFake(TOKEN) as fake:
        fake.push_photo(1, 1, b"small")
        fake.push_document(
            1,
            1,
            b"big",
            file_name="big.pdf",
            mime_type="application/pdf",
            reported_size=20 * 1024 * 1024 + 1,
        )
        bot = Bot(TOKEN, base_url=fake.base_url + "/bot", base_file_url=fake.base_url + "/file/bot")
        photo, document = (m.payload for m in fake.messages(1, include_incoming=True))
        async with bot:
            file = await bot.get_file(photo["photo"][-1]["file_id"])
            assert bytes(await file.download_as_bytearray()) == b"small"
            with pytest.raises(BadRequest, match="Invalid file_id"):
                await bot.get_file("fake-nothing")
            with pytest.raises(BadRequest, match="File is too big"):
                await bot.get_file(document["document"]["file_id"])
    described = [
        c.response["description"] for c in fake.calls("getFile") if c.response and c.status == 400
    ]
    assert described == ["Bad Request: invalid file_id", "Bad Request: file is too big"]


@pytest.mark.anyio
async def test_the_transcription_fake_is_as_strict_as_openai() -> None:
    with TranscriptionFake(api_key="sk-right") as fake:
        url = fake.base_url + "/audio/transcriptions"
        async with httpx2.AsyncClient() as client:
            files = {"file": ("voice.ogg", b"OggS", "audio/ogg")}
            none = await client.post(url, data={"model": "whisper-1"}, files=files)
            wrong = await client.post(
                url,
                data={"model": "whisper-1"},
                files=files,
                headers={"Authorization": "Bearer sk-wrong"},
            )
            good = {"Authorization": "Bearer sk-right"}
            no_model = await client.post(url, files=files, headers=good)
            bad_ext = await client.post(
                url,
                data={"model": "whisper-1"},
                headers=good,
                files={"file": ("voice.aiff", b"FORM", "audio/aiff")},
            )
            fine = await client.post(url, data={"model": "whisper-1"}, files=files, headers=good)
    assert (none.status_code, wrong.status_code) == (401, 401)
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    assert no_model.status_code == 400
    assert no_model.json()["error"]["param"] == "model"
    assert bad_ext.json()["error"]["message"].startswith("Invalid file format. Supported formats:")
    assert fine.json() == {"text": "hello from the fake"}
    assert len(fake.requests) == 1
