"""Helpers for runtime tests over the strict fake.

* :func:`daemon` is the runtime as the host assembles it over the real Anthropic SDK,
  the strict fake and a SQLite file;
* :func:`store_raw` writes a history straight into SQLite, in any shape, the way an older
  version of the bot may have left it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_api import AnthropicFake
from tests.runtime.conftest import make_catalog
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.messages import Message, message_to_json
from thalos_bot.media.store import MediaStore
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.providers.base import ModelProvider
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.types import ToolCatalog


@asynccontextmanager
async def daemon(
    path: Path,
    fake: AnthropicFake | None,
    tools: ToolCatalog | None = None,
    media: MediaStore | None = None,
    provider: ModelProvider | None = None,
    **settings: Any,
) -> AsyncIterator[Runtime]:
    """A runtime over the real SDK, the strict fake and SQLite (no SDK retries);
    ``media`` is the media store (an in-memory one when not given); ``provider`` one
    over another fake (then ``fake`` may be None)."""
    db = await Database.open(path)
    if provider is None:
        assert fake is not None
        provider = AnthropicProvider(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0)
    try:
        async with Runtime(
            catalog=make_catalog(),
            store=SqliteSessionStore(db),
            provider=provider,
            settings=RuntimeSettings(model="claude-test", **settings),
            tools=tools,
            media=media,
        ) as runtime:
            yield runtime
    finally:
        await provider.aclose()
        await db.aclose()


async def store_raw(path: Path, session_id: SessionId, messages: Sequence[Message]) -> None:
    """Replace the stored history of ``session_id`` with ``messages``, unmerged and
    unchecked."""
    db = await Database.open(path)
    try:
        async with db.transaction() as conn:
            await conn.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))
            await conn.executemany(
                "INSERT INTO session_messages (session_id, seq, role, content) VALUES (?, ?, ?, ?)",
                [(session_id, i, m.role, message_to_json(m)) for i, m in enumerate(messages)],
            )
    finally:
        await db.aclose()
