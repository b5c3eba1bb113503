"""What a person sends on Telegram reaches the model whole and valid, or not at all:
photos, albums, PDFs, text files, voice notes, replies to a photo; each checked by the
strict Anthropic fake, which refuses a block the real API would."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from PIL import Image

from tests.fakes.anthropic_api import text_reply
from tests.fakes.transcription_api import TranscriptionFake
from tests.media.host import USER, image_of, jpeg, running_daemon
from tests.media.samples import pdf as pdf_of
from thalos_bot.channels.intake.files import NO_TRANSCRIPTION
from thalos_bot.media.documents import not_understood
from thalos_bot_telegram.intake import LIMIT

TOO_BIG = LIMIT.too_big

pytestmark = pytest.mark.anyio


def _green(image: Image.Image) -> int:
    pixel = image.convert("RGB").getpixel((5, 5))
    assert isinstance(pixel, tuple)
    return int(pixel[1])


async def test_a_photo_with_its_caption_is_one_image_and_the_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("A red square."))
        bot.telegram.push_photo(USER, USER, jpeg(3000, 2000), caption="look at this")
        assert await bot.shown(lambda t: "A red square." in t) == ["A red square."]
        content = bot.last_user_content()
    assert [b["type"] for b in content] == ["image", "text"]
    assert content[1]["text"] == "look at this"
    assert content[0]["source"]["media_type"] == "image/jpeg"
    assert image_of(content[0]).size == (1568, 1045), "scaled to the 1568 px long edge"


async def test_an_album_is_one_turn_with_every_photo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("Three squares."))
        for index, colour in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
            bot.telegram.push_photo(
                USER,
                USER,
                jpeg(640, 480, colour),
                caption="which is greenest?" if index == 0 else None,
                media_group_id="album-1",
            )
        await bot.shown(lambda t: "Three squares." in t)
        assert len(bot.anthropic.requests) == 1, "one turn for the whole album"
        content = bot.last_user_content()
    assert [b["type"] for b in content] == ["image", "image", "image", "text"]
    greens = [_green(image_of(b)) for b in content[:3]]
    assert greens.index(max(greens)) == 1, "in the order they were sent"
    assert content[3]["text"] == "which is greenest?"


async def test_a_photo_over_the_download_limit_gets_a_notice_and_nothing_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.telegram.push_photo(USER, USER, jpeg(64, 64), reported_size=21 * 1024 * 1024)
        bot.telegram.push_photo(USER, USER, jpeg(64, 64), media_group_id="a", caption="both")
        bot.telegram.push_photo(
            USER, USER, jpeg(64, 64), media_group_id="a", reported_size=25 * 1024 * 1024
        )
        texts = await bot.shown(lambda t: len(t) >= 2)
    assert texts == [TOO_BIG, TOO_BIG], "the album is refused whole, not sent half"
    assert "20 MB" in TOO_BIG
    assert bot.anthropic.requests == []


async def test_a_pdf_is_a_document_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pdf = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("An empty PDF."))
        bot.telegram.push_document(
            USER, USER, pdf, file_name="report.pdf", mime_type="application/pdf", caption="sum up"
        )
        await bot.shown(lambda t: "An empty PDF." in t)
        content = bot.last_user_content()
    assert content[0]["type"] == "document"
    assert content[0]["source"]["media_type"] == "application/pdf"
    assert base64.b64decode(content[0]["source"]["data"]) == pdf
    assert content[0]["title"] == "report.pdf"
    assert content[1] == {"type": "text", "text": "sum up"}


async def test_a_pdf_over_100_pages_gets_a_notice_and_never_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.telegram.push_document(
            USER, USER, pdf_of(101), file_name="book.pdf", mime_type="application/pdf"
        )
        texts = await bot.shown(lambda t: any("pages" in text for text in t))
    assert any("101 pages; the model reads at most 100 pages" in t for t in texts), texts
    assert bot.anthropic.requests == [], "nothing is sent, and nothing enters the history"


async def test_a_text_file_is_text_headed_with_its_name_and_cut_with_a_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = "print('hello')\n" * 200  # 3,000 characters
    async with running_daemon(tmp_path, monkeypatch, telegram="text_file_max_chars = 1000") as bot:
        bot.anthropic.enqueue(text_reply("It prints hello."))
        bot.telegram.push_document(
            USER, USER, source.encode(), file_name="hello.py", mime_type="text/x-python"
        )
        await bot.shown(lambda t: "It prints hello." in t)
        content = bot.last_user_content()
    assert len(content) == 1
    text = content[0]["text"]
    assert text.startswith("[file: hello.py]\nprint('hello')")
    assert "the file has 3,000 characters; only the first 1,000 are shown" in text
    assert len(text) < 1200


async def test_a_file_that_only_claims_to_be_text_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.telegram.push_document(
            USER, USER, b"\x00\x01\x02binary", file_name="data.txt", mime_type="text/plain"
        )
        bot.telegram.push_document(
            USER, USER, b"PK\x03\x04", file_name="archive.zip", mime_type="application/zip"
        )
        texts = await bot.shown(lambda t: len(t) >= 2)
    assert sorted(texts) == sorted([not_understood("data.txt"), not_understood("archive.zip")])
    assert "PDF" in texts[0], "it says which kinds are understood"
    assert "photos" in texts[0]
    assert len(bot.telegram.files.downloads) == 1, "the zip is not even downloaded"
    assert bot.anthropic.requests == []


async def test_a_voice_note_without_transcription_says_how_to_turn_it_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.telegram.push_voice(USER, USER, b"OggS fake opus")
        texts = await bot.shown(lambda t: len(t) >= 1)
    assert texts == [NO_TRANSCRIPTION]
    assert "[transcription]" in texts[0]
    assert "THALOS_TRANSCRIPTION_API_KEY" in texts[0]
    assert bot.telegram.files.downloads == [], "not downloaded for nothing"


async def test_a_voice_note_is_transcribed_shown_back_and_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-transcribe-secret"
    monkeypatch.setenv("THALOS_TRANSCRIPTION_API_KEY", key)
    with TranscriptionFake(api_key=key, transcript="  what is the weather like  ") as stt:
        extra = f'[transcription]\nbase_url = "{stt.base_url}"\nmodel = "whisper-1"\n'
        async with running_daemon(tmp_path, monkeypatch, extra=extra) as bot:
            bot.anthropic.enqueue(text_reply("Sunny."))
            bot.telegram.push_voice(USER, USER, b"OggS fake opus")
            texts = await bot.shown(lambda t: "Sunny." in t)
            content = bot.last_user_content()
    assert texts == ["🎤 what is the weather like", "Sunny."]
    assert content == [{"type": "text", "text": "what is the weather like"}]
    [call] = stt.requests
    assert call.model == "whisper-1"
    assert call.filename == "voice.ogg"
    assert call.authorization == f"Bearer {key}"


async def test_a_reply_to_a_photo_re_attaches_it_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("A square."), text_reply("Red."))
        bot.telegram.push_photo(USER, USER, jpeg(320, 240))
        await bot.shown(lambda t: "A square." in t)
        photo_id = bot.telegram.incoming_ids(USER)[0]
        bot.telegram.push_reply(USER, USER, "what colour is it?", reply_to=photo_id)
        await bot.shown(lambda t: "Red." in t)
        content = bot.last_user_content()
        first = bot.anthropic.requests[0].body["messages"][-1]["content"][0]
    assert [b["type"] for b in content] == ["image", "text"]
    assert content[0]["source"]["data"] == first["source"]["data"], "the same photo"
    assert len(bot.telegram.files.downloads) == 1, "from the store, not downloaded again"


async def test_the_same_photo_twice_is_stored_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    photo = jpeg(800, 600)
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("One."), text_reply("Two."))
        bot.telegram.push_photo(USER, USER, photo, caption="first")
        await bot.shown(lambda t: "One." in t)
        after_one = bot.media_rows()
        bot.telegram.push_photo(USER, USER, photo, caption="again")
        await bot.shown(lambda t: "Two." in t)
        after_two = bot.media_rows()
        second = bot.anthropic.requests[1].body["messages"]
    assert len(after_one) == 1
    assert after_two == after_one, "storage stays flat"
    assert after_one[0][1] == len(photo)
    images = [b for m in second for b in m["content"] if b["type"] == "image"]
    assert len(images) == 2, "both turns still show their photo"


async def test_words_sent_right_after_a_photo_do_not_overtake_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("A photo."), text_reply("Fine."))
        bot.telegram.push_photo(USER, USER, jpeg(2400, 1800))  # scaling takes a moment
        bot.telegram.push_text(USER, USER, "what is this?")
        await bot.shown(lambda t: "A photo." in t)
    first = bot.anthropic.requests[0].body["messages"][-1]["content"]
    assert first[0]["type"] == "image", "the photo reached the model first"


SVG = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
    '<circle cx="5" cy="5" r="4" fill="teal"/></svg>\n'
)


@pytest.mark.parametrize(
    ("name", "mime"),
    [("logo.svg", "image/svg+xml"), ("logo.svg", "image/svg"), ("logo", "image/png")],
    ids=["svg-type", "svg-extension", "svg-bytes"],
)
async def test_an_svg_is_read_as_its_source_not_refused_as_an_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, mime: str
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("A teal circle."))
        bot.telegram.push_document(USER, USER, SVG.encode(), file_name=name, mime_type=mime)
        await bot.shown(lambda t: "A teal circle." in t)
        content = bot.last_user_content()
    assert [b["type"] for b in content] == ["text"]
    assert content[0]["text"] == f"[file: {name}]\n{SVG}"
