"""Noting message ids (for checking a send in doubt) never stops a batch: an update whose
chat is malformed is skipped there and still reaches admission, which judges it."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from telegram import Bot, Update

from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot_telegram.adapter import TelegramAdapter
from thalos_bot_telegram.updates import decode_batch

pytestmark = pytest.mark.anyio


def _message(chat: object, message_id: int) -> dict[str, object]:
    return {
        "message_id": message_id,
        "date": 1,
        "chat": chat,
        "from": {"id": 7, "is_bot": False, "first_name": "A"},
        "text": "hi",
    }


async def test_a_malformed_chat_type_does_not_stop_the_batch() -> None:
    raw = [
        {"update_id": 1, "message": _message({"id": 7, "type": {"not": "hashable"}}, 5)},
        {"update_id": 2, "message": _message({"id": 7, "type": "private"}, 6)},
    ]
    updates = decode_batch(raw, None).updates
    dispatched: list[Sequence[Update]] = []
    async with anyio.create_task_group() as group:
        adapter = TelegramAdapter(
            Bot("1:x"),
            group,
            Rendering("off", 4.0, 0.1, 1.0),
            chat_min_interval=1.0,
            global_max_rate=30,
        )
        adapter.watching(dispatched.append)(updates)
        group.cancel_scope.cancel()
    assert [len(batch) for batch in dispatched] == [len(updates)]
    assert adapter._seen == {7: 6}, "the well-formed message's id is still noted"
