"""Files in (downloaded with the bot token, read like every channel's) and tool images
out (files.uploadV2 into the conversation)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fakes.slack_api import SlackFake
from tests.media.transcribing import transcribing, words_sent
from tests.slack.harness import CHANNEL, running_bot
from tests.telegram.test_tool_images import CAPTION, PNG, Drawer
from thalos_bot.domain.messages import DocumentBlock, ImageBlock
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider

pytestmark = pytest.mark.anyio


def _blocks(provider: ScriptedProvider) -> list[object]:
    return list(provider.requests[0].messages[-1].content)


async def test_a_shared_text_file_reaches_the_model(fake: SlackFake, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("read it")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        notes = ("notes.txt", "text/plain", b"buy milk\nand bread\n")
        bot.say("what does it say?", files=[notes])
        await bot.shows(["read it"])
    assert fake.downloads_refused == 0, "downloaded with the bot token"
    blocks = _blocks(provider)
    assert "buy milk" in str(blocks)
    assert "what does it say?" in str(blocks)


async def test_a_shared_image_reaches_the_model_as_an_image(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("a pixel")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.say("", files=[("dot.png", "image/png", PNG)])
        await bot.shows(["a pixel"])
    assert any(isinstance(b, ImageBlock) for b in _blocks(provider))
    assert not any(isinstance(b, DocumentBlock) for b in _blocks(provider))


async def test_a_file_slack_would_not_serve_gets_a_notice(fake: SlackFake, tmp_path: Path) -> None:
    """As on every transport: the notice names the file's problem, and nothing of that
    message goes to the model (its words without the file would be answered wrongly)."""
    fake.serve_files = False  # Slack answers with its sign-in page (a revoked files:read)
    provider = ScriptedProvider([[Say("no file seen")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.say("see file", files=[("a.txt", "text/plain", b"hello")])
        (text,) = await bot.answer(1)
    assert fake.downloads_refused == 1
    assert "could not be downloaded" in text
    assert provider.requests == []


async def test_a_tool_image_goes_up_with_files_upload_v2(fake: SlackFake, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("Drawing."), CallTool("draw__chart")], [Say("Here.")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.runtime.tools = Drawer()
        root = bot.say(f"<@{fake.workspace.bot_user}> chart please", channel=CHANNEL)
        await fake.wait_for(lambda: any(m.files for m in fake.messages(CHANNEL)))
    (upload,) = [m for m in fake.messages(CHANNEL) if m.files]
    assert upload.thread_ts == root, "into the conversation's thread"
    assert upload.text == CAPTION
    (file_id,) = upload.files
    assert fake.workspace.files[file_id].data == PNG
    assert fake.texts(CHANNEL, thread_ts=root)[0] == "Drawing.\n\nHere."
    assert len(fake.calls_of("files.completeUploadExternal")) == 1


class Elsewhere:
    """A host that is not Slack's, recording the Authorization header of each request."""

    def __init__(self) -> None:
        self.authorizations: list[str] = []
        seen = self.authorizations

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization", ""))
                body = b"a file from elsewhere"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Elsewhere:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


async def test_the_bot_token_goes_only_to_slacks_file_host(fake: SlackFake, tmp_path: Path) -> None:
    """A file object naming another host (an external file, or a forged event) is not
    fetched with the bot token; the person is told it could not be downloaded."""
    provider = ScriptedProvider([[Say("no file seen")]])
    with Elsewhere() as elsewhere:
        async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
            bot.say(
                "see file",
                files=[("a.txt", "text/plain", b"hello")],
                external_url=f"{elsewhere.url}/a.txt",
            )
            (text,) = await bot.answer(1)
    assert fake.bot_token not in str(elsewhere.authorizations)
    assert elsewhere.authorizations == [], "nothing fetched from a host that is not Slack's"
    assert "could not be downloaded" in text
    assert provider.requests == []


async def test_an_audio_clip_is_transcribed_shown_back_and_answered(
    fake: SlackFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with transcribing(monkeypatch, "book a table for two") as (stt, settings):
        provider = ScriptedProvider([[Say("Booked.")]])
        async with running_bot(
            fake, provider, tmp_path=tmp_path, streaming="off", settings=settings
        ) as bot:
            bot.say("", files=[("audio_message.webm", "audio/webm", b"\x1aE\xdf\xa3 clip")])
            texts = await bot.answer(2)
    assert texts == ["🎤 book a table for two", "Booked."]
    assert words_sent(provider) == ["book a table for two"]
    (call,) = stt.requests
    assert call.filename == "audio_message.webm"
