"""No failure while handling one update ends the daemon: the notices a file gets in a
forum topic (the 🎤 line of a voice note, a refusal, "could not be downloaded") go to
that topic, and an unexpected error while handling one update is logged, answered with
the generic notice, and leaves everyone else served."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_groups import open_topic, push_group_file, push_group_text
from tests.fakes.transcription_api import TranscriptionFake
from tests.telegram.harness import USER, running_bot
from thalos_bot.channels.admission.guard import went_wrong
from thalos_bot.config.models import Settings
from thalos_bot.config.transcription import TranscriptionSettings
from thalos_bot.domain.ids import ConversationId
from thalos_bot_telegram.inbound import GUARD
from thalos_bot_telegram.intake import LIMIT

TOO_BIG, NOT_DOWNLOADED = LIMIT.too_big, LIMIT.not_downloaded

pytestmark = pytest.mark.anyio

FORUM = -1009876543210
BOT = "@thalos_test_bot"
KEY = "sk-transcribe-test"


@pytest.fixture
def stt(monkeypatch: pytest.MonkeyPatch) -> Iterator[TranscriptionFake]:
    monkeypatch.setenv("THALOS_TRANSCRIPTION_API_KEY", KEY)
    with TranscriptionFake(api_key=KEY, transcript="what is the weather like") as fake:
        yield fake


def _with(stt: TranscriptionFake) -> Settings:
    return Settings(transcription=TranscriptionSettings(base_url=stt.base_url))


def _topic_texts(fake: TelegramFake, thread: int) -> list[str]:
    return [m.text for m in fake.messages(FORUM) if m.payload.get("message_thread_id") == thread]


async def _shown(fake: TelegramFake, thread: int, *texts: str) -> None:
    """Wait until the topic shows just ``texts``. Not a count of messages: an answer
    streamed by edits is a message from its first preview on ("You")."""
    try:
        await fake.wait_for(lambda: _topic_texts(fake, thread) == list(texts), timeout=15)
    except TimeoutError:
        assert _topic_texts(fake, thread) == list(texts)
        raise


async def test_a_voice_note_in_a_forum_topic_shows_what_was_heard_there_and_is_answered(
    fake: TelegramFake, stt: TranscriptionFake
) -> None:
    fake.add_chat(FORUM, "supergroup", is_forum=True)
    topic = open_topic(fake, FORUM, USER, "Voice")
    expected = [
        "You said: hello",
        "🎤 what is the weather like",
        'You said: <quote from="assistant">\nYou said: hello\n</quote>\n\nwhat is the weather like',
        "You said: still there?",
    ]
    async with running_bot(fake, groups=[FORUM], streaming="off", settings=_with(stt)):
        push_group_text(fake, FORUM, USER, f"{BOT} hello", thread=topic)
        await _shown(fake, topic, *expected[:1])
        answer = fake.messages(FORUM)[-1].message_id
        push_group_file(
            fake, FORUM, USER, "voice", b"OggS fake opus", thread=topic, reply_to=answer
        )
        await _shown(fake, topic, *expected[:3])
        # The daemon still serves: the next message in the topic is answered too.
        push_group_text(fake, FORUM, USER, f"{BOT} still there?", thread=topic)
        await _shown(fake, topic, *expected)
    assert [m.payload.get("message_thread_id") for m in fake.messages(FORUM)] == [topic] * 4
    assert len(stt.requests) == 1


async def test_refusals_in_a_forum_topic_are_told_in_that_topic(fake: TelegramFake) -> None:
    fake.add_chat(FORUM, "supergroup", is_forum=True)
    topic = open_topic(fake, FORUM, USER, "Files")
    async with running_bot(fake, groups=[FORUM], streaming="edit") as bot:
        push_group_text(fake, FORUM, USER, f"{BOT} hello", thread=topic)
        await _shown(fake, topic, "You said: hello")
        answer = fake.messages(FORUM)[-1].message_id
        huge = 21 * 1024 * 1024
        push_group_file(
            fake, FORUM, USER, "photo", b"jpeg", thread=topic, reply_to=answer, reported_size=huge
        )
        await _shown(fake, topic, "You said: hello", TOO_BIG)
        fake.fail_next("getFile", 500, description="Internal Server Error")
        push_group_file(
            fake,
            FORUM,
            USER,
            "document",
            b"notes",
            thread=topic,
            reply_to=answer,
            file_name="notes.txt",
            mime_type="text/plain",
        )
        await _shown(fake, topic, "You said: hello", TOO_BIG, NOT_DOWNLOADED)
        push_group_text(fake, FORUM, USER, f"{BOT} still there?", thread=topic)
        await _shown(
            fake, topic, "You said: hello", TOO_BIG, NOT_DOWNLOADED, "You said: still there?"
        )
    assert len(bot.provider.requests) == 2, "no refused file reached the model"


async def test_an_unexpected_error_with_one_update_is_logged_and_told_and_the_rest_served(
    fake: TelegramFake,
) -> None:
    fake.add_chat(FORUM, "supergroup", is_forum=True)
    topic = open_topic(fake, FORUM, USER, "Broken")
    with capture_logs() as logs:
        async with running_bot(fake, groups=[FORUM], streaming="edit") as bot:
            push_group_text(fake, FORUM, USER, f"{BOT} hello", thread=topic)
            await _shown(fake, topic, "You said: hello")
            # A file whose getFile answer lacks the file_path (the Bot API makes it
            # optional): python-telegram-bot raises no TelegramError for that.
            answer = fake.messages(FORUM)[-1].message_id
            fake.files.omit_path_next()
            push_group_file(
                fake,
                FORUM,
                USER,
                "document",
                b"notes",
                thread=topic,
                reply_to=answer,
                file_name="notes.txt",
                mime_type="text/plain",
            )
            await _shown(fake, topic, "You said: hello", went_wrong())
            bot.say("and in private?")
            assert await bot.answer() == ["You said: and in private?"]
    assert _topic_texts(fake, topic) == ["You said: hello", went_wrong()]
    [failure] = [e for e in logs if e["event"] == "telegram_update_failed"]
    assert failure["log_level"] == "error"
    assert failure["chat"] == f"{FORUM}:{topic}"
    assert failure["error"] == "RuntimeError"


def test_a_notice_that_cannot_be_put_is_logged_and_never_raised() -> None:
    def broken(conversation: ConversationId, text: str) -> None:
        raise KeyError(text)  # its text would be the notice: never logged

    with capture_logs() as logs:
        GUARD.tell(broken, ConversationId("-100:7"), "private words")
    [event] = logs
    assert event["event"] == "telegram_notice_failed"
    assert event["chat"] == "-100:7"
    assert event["error"] == "KeyError"
    assert "private words" not in repr(logs)
