"""Helpers for runtime tests that hold requests to the real API's rules.

* :func:`api_body` maps a :class:`ModelRequest` (what the scripted provider sees) to the
  JSON body the Anthropic provider would send, so the strict rules apply to it too;
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
from tests.fakes.anthropic_rules import check_request
from tests.runtime.conftest import make_catalog
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.messages import Message, block_to_json, message_to_json
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.providers.anthropic_mapping import message_params, system_params, tool_params
from thalos_bot.providers.base import ModelRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.types import ToolCatalog


def api_body(request: ModelRequest, *, caching: bool = True) -> dict[str, Any]:
    """The JSON body :class:`AnthropicProvider` sends for ``request``."""
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_output_tokens,
        "messages": message_params(request.messages),
        "stream": True,
    }
    system = system_params(request.system, caching=caching)
    tools = tool_params(request.tools, caching=caching)
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
    return body


def refusals(requests: Sequence[ModelRequest]) -> list[str]:
    """Why the real API would refuse each of ``requests`` (empty when it accepts all)."""
    out = []
    for number, request in enumerate(requests):
        problem = check_request(api_body(request))
        if problem is not None:
            out.append(f"request #{number}: {problem}")
    return out


def messages_body(messages: Sequence[Message]) -> dict[str, Any]:
    """A request body with ``messages`` as the provider maps them."""
    return {"model": "m", "max_tokens": 16, "messages": message_params(messages)}


def raw_body(messages: Sequence[Message]) -> dict[str, Any]:
    """A request body with ``messages`` exactly as stored, nothing filtered."""
    raw = [{"role": m.role, "content": [block_to_json(b) for b in m.content]} for m in messages]
    return {"model": "m", "max_tokens": 16, "messages": raw}


@asynccontextmanager
async def daemon(
    path: Path, fake: AnthropicFake, tools: ToolCatalog | None = None, **settings: Any
) -> AsyncIterator[Runtime]:
    """A runtime over the real SDK, the strict fake and SQLite (no SDK retries)."""
    db = await Database.open(path)
    provider = AnthropicProvider(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0)
    try:
        async with Runtime(
            catalog=make_catalog(),
            store=SqliteSessionStore(db),
            provider=provider,
            settings=RuntimeSettings(model="claude-test", **settings),
            tools=tools,
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
