"""Media in a session's history: stored once by hash, resolved when a request is built,
replaced by a placeholder once old, and understood by the repair and by compaction."""

from __future__ import annotations

import pytest

from tests.media.host import jpeg
from tests.runtime.conftest import ALICE, RuntimeFactory
from thalos_bot.domain.attachments import Attachment, Reattach
from thalos_bot.domain.messages import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    message_from_json,
    message_to_json,
)
from thalos_bot.media.store import MemoryMediaStore, StoredMedia, media_hash
from thalos_bot.providers.anthropic_mapping import message_params
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.runtime.compaction import CompactionPolicy, is_turn_start, transcript
from thalos_bot.runtime.media import user_content
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.repair import repair_history

PHOTO = jpeg(64, 48)


def photo(origin: str = "") -> Attachment:
    return Attachment("image", "image/jpeg", PHOTO, origin=origin)


@pytest.mark.anyio
async def test_a_photo_without_words_is_a_turn_and_history_keeps_only_its_hash(
    make_runtime: RuntimeFactory,
) -> None:
    provider = ScriptedProvider([[Say("A small red picture.")]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)
        result = await runtime.run_turn(TurnRequest(session.id, ALICE, "", attachments=(photo(),)))
        history = await runtime.store.history(session.id)
    assert result.ok
    [request] = provider.requests
    block = request.messages[-1].content[0]
    assert block == ImageBlock(media_hash(PHOTO), "image/jpeg", len(PHOTO), 64, 48)
    assert request.media[block.media_hash].data == PHOTO, "the bytes travel with the request"
    stored = message_to_json(history[0])
    assert len(stored) < 200, "the row holds the hash, not the photo"
    assert message_from_json(stored) == history[0]


@pytest.mark.anyio
async def test_old_images_become_placeholders_in_what_is_sent(
    make_runtime: RuntimeFactory,
) -> None:
    provider = ScriptedProvider([[Say(f"seen {n}")] for n in range(4)])
    policy = CompactionPolicy(keep_media_turns=2)
    async with make_runtime(provider, compaction=policy) as runtime:
        session = await runtime.create_session("helper", ALICE)
        for n in range(4):
            image = Attachment("image", "image/jpeg", jpeg(32 + n, 32))
            await runtime.run_turn(
                TurnRequest(session.id, ALICE, f"photo {n}", attachments=(image,))
            )
        history = await runtime.store.history(session.id)
    last = provider.requests[-1]
    users = [m for m in last.messages if m.role == "user"]
    kinds = [type(m.content[0]).__name__ for m in users]
    assert kinds == ["TextBlock", "TextBlock", "ImageBlock", "ImageBlock"]
    assert users[0].content[0].text.startswith("[An earlier image (image/jpeg")  # type: ignore[union-attr]
    assert len(last.media) == 2, "only the kept images are read from the store"
    assert sum(1 for m in history for b in m.content if isinstance(b, ImageBlock)) == 4, (
        "the stored history keeps every image"
    )


def test_the_summary_transcript_names_an_image_without_its_bytes() -> None:
    image = ImageBlock("ab" * 32, "image/png", 4096)
    text = transcript([Message("user", (image, TextBlock("what is this?")))], 10_000)
    assert "User sent: [An earlier image (image/png, 4 KB), not shown again.]" in text
    assert "ab" * 32 not in text


def test_media_starts_a_turn_and_is_only_ever_the_persons() -> None:
    image = ImageBlock("h", "image/jpeg", 10)
    assert is_turn_start(Message("user", (image,)))
    assert Message("user", (image,)).starts_turn
    broken = [
        Message("user", (TextBlock("hi"),)),
        Message("assistant", (TextBlock("hello"), image)),
        Message("user", (DocumentBlock("d", size=5),)),
    ]
    repaired = repair_history(broken)
    assert repaired.fixes == {"misplaced_blocks": 1}
    assert repaired.messages[1].content == (TextBlock("hello"),)
    assert repaired.messages[2].content == (DocumentBlock("d", size=5),)


@pytest.mark.anyio
async def test_a_reply_re_attaches_what_is_still_stored_and_says_when_it_is_gone() -> None:
    store = MemoryMediaStore()
    first = await user_content("", (photo("chat:1"),), store)
    again = await user_content("what colour?", (Reattach("chat:1"),), store)
    assert again == (first[0], TextBlock("what colour?"))
    assert store.stored_bytes == len(PHOTO), "stored once"
    store.forget(media_hash(PHOTO))
    gone = await user_content("and now?", (Reattach("chat:1"),), store)
    assert gone == (
        TextBlock("[The file this message replies to is no longer stored.]"),
        TextBlock("and now?"),
    )


def test_an_image_no_longer_stored_is_sent_as_a_short_note() -> None:
    kept = ImageBlock("k", "image/png", 3)
    lost = ImageBlock("l", "image/png", 3)
    media = {"k": StoredMedia("k", "image/png", b"png")}
    [params] = message_params([Message("user", (kept, lost, TextBlock("hi")))], media)
    content = list(params["content"])
    assert content[0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "cG5n"},
    }
    assert content[1] == {"type": "text", "text": "[An image sent earlier is no longer stored.]"}
