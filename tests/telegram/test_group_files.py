"""A file in a group is addressed like a text, by its caption: a mention of the bot in
``caption_entities`` (or a ``text_mention`` of it), or a reply to the bot. The mention
is stripped from the caption the model reads; a file for someone else stays unseen."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_groups import open_topic, push_group_file, push_group_text
from tests.media.host import jpeg
from tests.telegram.harness import USER, running_bot
from thalos_bot.domain.messages import ImageBlock

pytestmark = pytest.mark.anyio

GROUP = -1001234567890
FORUM = -1009876543210
BOT = "@thalos_test_bot"


async def _shows(fake: TelegramFake, chat: int, *texts: str) -> None:
    await fake.wait_for(lambda: fake.texts(chat) == list(texts), timeout=10)


async def test_a_photo_captioned_with_a_mention_is_answered_without_the_mention(
    fake: TelegramFake,
) -> None:
    fake.add_chat(GROUP, "supergroup")
    async with running_bot(fake, groups=[GROUP], streaming="off") as bot:
        push_group_file(fake, GROUP, USER, "photo", jpeg(64, 48), caption=f"{BOT} what is this?")
        await _shows(fake, GROUP, "You said: what is this?")
    [request] = bot.provider.requests
    last = request.messages[-1]
    assert last.text == "what is this?"
    assert [type(b) for b in last.content if isinstance(b, ImageBlock)] == [ImageBlock]


async def test_a_file_captioned_for_someone_else_is_not_seen(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    async with running_bot(fake, groups=[GROUP], streaming="off") as bot:
        push_group_file(fake, GROUP, USER, "photo", jpeg(64, 48), caption="@someone_else look")
        push_group_file(fake, GROUP, USER, "photo", jpeg(64, 48), caption=f"look {BOT[1:]}")
        push_group_text(fake, GROUP, USER, f"{BOT} and this text?")
        await _shows(fake, GROUP, "You said: and this text?")
    assert len(bot.provider.requests) == 1, "neither photo was for the bot"
    assert fake.files.downloads == [], "nor was either downloaded"


async def test_a_text_mention_of_the_bot_in_a_caption_addresses_it(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    caption = "Thalos, sum this up"
    mention = {"type": "text_mention", "offset": 0, "length": 6, "user": fake.bot_user}
    async with running_bot(fake, groups=[GROUP], streaming="off") as bot:
        push_group_file(
            fake,
            GROUP,
            USER,
            "document",
            b"line one\nline two\n",
            caption=caption,
            caption_entities=[mention],
            file_name="notes.txt",
            mime_type="text/plain",
        )
        await fake.wait_for(lambda: len(fake.texts(GROUP)) == 1, timeout=10)
    [request] = bot.provider.requests
    assert request.messages[-1].text == "[file: notes.txt]\nline one\nline two\n, sum this up"


async def test_a_voice_note_captioned_with_a_mention_in_a_topic_is_for_the_bot(
    fake: TelegramFake,
) -> None:
    """No transcription is configured: the notice naming it proves the note was taken."""
    fake.add_chat(FORUM, "supergroup", is_forum=True)
    topic = open_topic(fake, FORUM, USER, "Voice")
    async with running_bot(fake, groups=[FORUM], streaming="off"):
        push_group_file(fake, FORUM, USER, "voice", b"OggS", caption=f"{BOT} listen", thread=topic)
        await fake.wait_for(lambda: len(fake.texts(FORUM)) == 1, timeout=10)
    [notice] = fake.messages(FORUM)
    assert "transcription" in notice.text
    assert notice.payload["message_thread_id"] == topic


async def test_a_text_mention_of_the_bot_in_a_text_addresses_it_too(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    mention = {"type": "text_mention", "offset": 6, "length": 6, "user": fake.bot_user}
    content = {"text": "Hello Thalos, how are you?", "entities": [mention]}
    async with running_bot(fake, groups=[GROUP], streaming="off"):
        fake.push_message(GROUP, USER, chat_type="supergroup", content=content)
        await _shows(fake, GROUP, "You said: Hello, how are you?")
