"""Decoding a session's stored messages, shared by the SQLite and PostgreSQL stores."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.lowlevel

from thalos_bot.domain.messages import Message, message_from_json

DECODE_BATCH = 64
"""Messages decoded between two checkpoints when a long history is loaded."""


async def decode_history(contents: Sequence[str]) -> list[Message]:
    """The messages stored as ``contents`` (JSON), in order. A long tail is decoded in
    batches, letting other conversations run between."""
    messages = [message_from_json(c) for c in contents[:DECODE_BATCH]]
    for first in range(DECODE_BATCH, len(contents), DECODE_BATCH):
        await anyio.lowlevel.checkpoint()
        messages += [message_from_json(c) for c in contents[first : first + DECODE_BATCH]]
    return messages
