"""The fakes for files, transcription and speech refuse what the real services refuse."""

from __future__ import annotations

import httpx2
import pytest
from telegram import Bot
from telegram.error import BadRequest

from tests.fakes.speech_api import SpeechFake
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


@pytest.mark.anyio
async def test_the_speech_fake_is_as_strict_as_openai() -> None:
    with SpeechFake(api_key="sk-right") as fake:
        url = fake.base_url + "/audio/speech"
        good = {"Authorization": "Bearer sk-right"}
        body = {"model": "tts-1", "voice": "alloy", "input": "Hello.", "response_format": "opus"}
        async with httpx2.AsyncClient() as client:
            none = await client.post(url, json=body)
            wrong = await client.post(url, json=body, headers={"Authorization": "Bearer sk-x"})
            refused = [
                await client.post(url, json={**body, **change}, headers=good)
                for change in (
                    {"input": "a" * 4097},
                    {"voice": "bob"},
                    {"response_format": "ogg"},
                    {"speed": 9},
                    {"model": "tts-9"},
                )
            ]
            no_voice = await client.post(
                url, json={"model": "tts-1", "input": "Hello."}, headers=good
            )
            fine = await client.post(url, json=body, headers=good)
            mp3 = await client.post(url, json={**body, "response_format": "mp3"}, headers=good)
    assert (none.status_code, wrong.status_code) == (401, 401)
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    assert [r.status_code for r in refused] == [400, 400, 400, 400, 404]
    errors = [r.json()["error"] for r in refused]
    assert all(set(e) == {"message", "type", "param", "code"} for e in errors)
    assert all(e["type"] == "invalid_request_error" for e in errors)
    assert "at most 4096 characters" in errors[0]["message"]
    assert [e["param"] for e in errors[1:4]] == ["voice", "response_format", "speed"]
    assert errors[1]["message"].startswith("Invalid value: 'bob'. Supported values are: 'alloy'")
    assert errors[2]["message"].endswith("'wav', and 'pcm'.")
    assert errors[4]["code"] == "model_not_found"
    assert (no_voice.status_code, no_voice.json()["error"]["param"]) == (400, "voice")
    assert fine.headers["content-type"] == "audio/ogg"
    assert fine.content.startswith(b"OggS")
    assert b"OpusHead" in fine.content
    assert mp3.headers["content-type"] == "audio/mpeg"
    assert [c.response_format for c in fake.requests] == ["opus", "mp3"]
