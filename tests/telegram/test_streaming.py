"""Answers stream on the pump's cadence (drafts or edits), and the final text is the
model's text, exactly once, split at 4096 UTF-16 code units when it is longer."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_html import parse_html, utf16_len
from tests.telegram.harness import USER, running_bot
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio

PROSE = (
    "Streaming is when the answer shows up while it is being written. "
    "It makes a slow model feel quick, and it lets you stop an answer early. "
    "This sentence is here to make the stream last a little longer."
)


def chunks(text: str, size: int = 6) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def streamed(text: str, *, delay: float = 0.01, size: int = 6) -> ScriptedProvider:
    return ScriptedProvider([[Say(*chunks(text, size), delay=delay)]])


async def test_draft_streaming_then_one_final_message(fake: TelegramFake) -> None:
    async with running_bot(fake, streamed(PROSE), streaming="draft") as bot:
        bot.say("explain streaming")
        texts = await bot.answer()
        flushes = len(bot.adapter.flushes)
    assert texts == [PROSE]
    drafts = fake.calls("sendMessageDraft", chat_id=USER)
    assert 2 <= len(drafts) <= flushes, "at most one draft per flush"
    shown = [parse_html(call.params["text"]).text for call in drafts]
    assert all(PROSE.startswith(text) for text in shown), "drafts are prefixes of the answer"
    assert len({call.params["draft_id"] for call in drafts}) == 1, "one animated draft"
    assert len(fake.calls("sendMessage", chat_id=USER)) == 1
    assert fake.calls("editMessageText") == []
    assert fake.retry_after_violations == []


async def test_edit_streaming_edits_one_message_in_place(fake: TelegramFake) -> None:
    async with running_bot(fake, streamed(PROSE), streaming="edit") as bot:
        bot.say("explain streaming")
        await fake.wait_for(lambda: fake.texts(USER) == [PROSE], 10)
        flushes = len(bot.adapter.flushes)
    (message,) = fake.messages(USER)
    sends = fake.calls("sendMessage", chat_id=USER)
    edits = fake.calls("editMessageText", chat_id=USER)
    assert len(sends) == 1
    assert 1 <= len(edits) <= flushes, "at most one edit per flush"
    assert len(message.history) == len(edits)
    assert all(PROSE.startswith(v.text) for v in message.history), "never a wrong text"
    assert fake.calls("sendMessageDraft") == []
    assert fake.retry_after_violations == []


async def test_streaming_off_sends_only_the_final_text(fake: TelegramFake) -> None:
    async with running_bot(fake, streamed(PROSE), streaming="off") as bot:
        bot.say("explain streaming")
        assert await bot.answer() == [PROSE]
    methods = {call.method for call in fake.calls(chat_id=USER)}
    assert methods == {"sendChatAction", "sendMessage"}


async def test_markdown_is_rendered_as_html(fake: TelegramFake) -> None:
    answer = "Use **bold** for `code` & <tags>:\n```sh\nls -la\n```"
    provider = ScriptedProvider([[Say(answer)]])
    async with running_bot(fake, provider) as bot:
        bot.say("format please")
        (text,) = await bot.answer()
    assert text == "Use bold for code & <tags>:\nls -la"
    (message,) = fake.messages(USER)
    assert [e["type"] for e in message.entities] == ["bold", "code", "pre"]


async def test_typing_is_shown_while_the_answer_is_written(fake: TelegramFake) -> None:
    provider = streamed(PROSE, delay=0.01)
    async with running_bot(fake, provider, typing_interval=0.1) as bot:
        bot.say("go")
        await bot.answer()
    typing = fake.calls("sendChatAction", chat_id=USER)
    assert len(typing) >= 2
    assert all(call.params["action"] == "typing" for call in typing)
    final = fake.calls("sendMessage", chat_id=USER)[0]
    assert typing[0].at < final.at


@pytest.mark.parametrize("mode", ["draft", "edit", "off"])
async def test_a_long_answer_is_split_at_paragraphs(fake: TelegramFake, mode: str) -> None:
    paragraphs = [f"Part {i}: " + ("lorem ipsum dolor " * 170).strip() for i in range(4)]
    answer = "\n\n".join(paragraphs)
    assert utf16_len(answer) > 3 * 4096 - 1000
    provider = streamed(answer, delay=0.002, size=200)
    async with running_bot(fake, provider, streaming=mode) as bot:
        bot.say("write a lot")
        await fake.wait_for(lambda: "\n\n".join(fake.texts(USER)) == answer, 15)
    texts = fake.texts(USER)
    assert texts == paragraphs
    assert all(call.status == 200 for call in fake.calls(chat_id=USER))
    assert fake.retry_after_violations == []


@pytest.mark.parametrize("mode", ["draft", "edit"])
async def test_emoji_heavy_answers_count_utf16_units(fake: TelegramFake, mode: str) -> None:
    line = "🎉 party 👍🏽 thumbs 🇺🇦 flag 👨‍👩‍👧 family\n"
    answer = (line * 300).strip()  # 11,699 Python characters, 14,099 UTF-16 code units
    provider = streamed(answer, delay=0.002, size=300)
    async with running_bot(fake, provider, streaming=mode) as bot:
        bot.say("emoji please")
        await fake.wait_for(lambda: "\n".join(fake.texts(USER)) == answer, 15)
    texts = fake.texts(USER)
    assert len(texts) == 4, "4 parts by UTF-16 units (3 if counted in Python characters)"
    assert all(utf16_len(text) <= 4096 for text in texts)
    assert all(text.startswith("🎉") and text.endswith("family") for text in texts)
    assert all(call.status == 200 for call in fake.calls(chat_id=USER))


async def test_a_long_code_block_is_closed_and_reopened(fake: TelegramFake) -> None:
    code = "\n".join(f"print('line {i}')  # " + "x" * 30 for i in range(250))
    answer = f"Here you go:\n\n```python\n{code}\n```\n\nRun it."
    provider = streamed(answer, delay=0.002, size=400)
    async with running_bot(fake, provider, streaming="edit") as bot:
        bot.say("code please")
        await fake.wait_for(lambda: (t := fake.texts(USER)) and t[-1].endswith("Run it."), 15)
    messages = fake.messages(USER)
    assert len(messages) >= 3
    for message in messages[:-1]:
        assert message.raw_text.count("<pre>") + message.raw_text.count("<pre><code") >= 1
        assert any(e["type"] == "pre" and e.get("language") == "python" for e in message.entities)
    visible = "\n".join(m.text for m in messages)
    for i in range(250):
        assert f"print('line {i}')" in visible
    assert visible.count("print('line 0')") == 1, "nothing duplicated"
