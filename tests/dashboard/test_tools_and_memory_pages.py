"""Tools and skills: each tool source (a real MCP server subprocess, one that cannot
start, the built-in memory source) with its state, and the skills store's catalogue;
memory: count, mode and pending reindex, over a real SQLite store."""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.dashboard.host import GUEST, host_deps, serving
from tests.tools.conftest import LIMITS, stdio_server
from thalos_bot.config.memory import MemorySettings
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.dashboard.catalogue import skill_rows, source_rows
from thalos_bot.dashboard.deps import DashboardDeps, MemoryView
from thalos_bot.dashboard.memory import memory_summary
from thalos_bot.memory.assembly import build_memory
from thalos_bot.memory.records import NewMemory
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.skills.document import SkillDocument
from thalos_bot.skills.store import SkillStore
from thalos_bot.storage.database import Database
from thalos_bot.storage.progress import MEMORY_REINDEX, ProgressBoard, read_progress
from thalos_bot.tools.mcp import McpServers
from thalos_bot.tools.source import ToolSource

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>"


def _broken() -> McpServerSettings:
    return McpServerSettings(
        name="broken", command=sys.executable, args=["-c", "raise SystemExit(3)"]
    )


async def _skills(db: Database) -> SkillStore:
    store = SkillStore(db)
    docs = [
        SkillDocument(
            "pdf-tools",
            f"Work with PDFs {HOSTILE}",
            "Body.",
            Path("/skills/pdf/SKILL.md"),
            "a" * 64,
            tags=("docs",),
        ),
        SkillDocument("old-skill", "Gone now.", "Body.", Path("/skills/old/SKILL.md"), "b" * 64),
    ]
    await store.write(docs, [], NOW - timedelta(days=1))
    await store.write([], ["old-skill"], NOW)
    return store


@pytest.mark.anyio
async def test_sources_show_each_state_and_skills_the_catalogue(tmp_path: Path) -> None:
    async with (
        await Database.open(tmp_path / "t.db", migrations=ALL_MIGRATIONS) as db,
        McpServers.start([stdio_server("test"), _broken()], LIMITS) as servers,
    ):
        memory = build_memory(db, MemorySettings())
        sources: list[ToolSource] = [*servers.sources, memory.source]
        rows = source_rows(sources)
        skills = await skill_rows(await _skills(db))
    assert [(r.name, r.kind, r.state) for r in rows] == [
        ("test", "MCP server", "ready"),
        ("broken", "MCP server", "failed"),
        ("memory", "built in", "ready"),
    ]
    assert "echo" in rows[0].tools
    assert rows[0].tool_count == len(rows[0].tools)
    assert rows[1].reason  # says why it never started
    assert rows[1].tools == ()
    assert [(s.name, s.active) for s in skills] == [("old-skill", False), ("pdf-tools", True)]
    assert skills[1].tags == ("docs",)


def test_the_tools_page_shows_sources_and_skills_escaped(tmp_path: Path) -> None:
    async def deps(db: Database, stack: AsyncExitStack) -> DashboardDeps:
        servers = await stack.enter_async_context(
            McpServers.start([stdio_server("test"), _broken()], LIMITS)
        )
        return host_deps(
            tool_sources=lambda: servers.sources, skills=await _skills(db), clock=lambda: NOW
        )

    with serving(tmp_path / "t.db", deps, GUEST) as served:
        body = served.client.get("/dashboard/tools").text
    assert "<script>" not in body
    assert "Work with PDFs &lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert '<span class="up">ready</span>' in body
    assert '<span class="down">failed</span>' in body
    assert "pdf-tools" in body
    assert ">inactive<" in body
    assert "/skills/pdf/SKILL.md" in body


@pytest.mark.anyio
async def test_memory_counts_mode_and_pending_over_a_real_store(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "t.db", migrations=ALL_MIGRATIONS) as db:
        memory = build_memory(db, MemorySettings())
        for text in ("The cat is called Tom.", "Alice likes tea.", "The server is in Zurich."):
            await memory.store.store(NewMemory(owner="alice", text=text))
        first = (await memory.store.list("alice"))[0]
        assert await memory.store.archive("alice", first.id) is not None
        board = ProgressBoard(db, MEMORY_REINDEX)
        await board.begin(10, "pending")
        await board.advance(4, 10)
        view = MemoryView(
            memory.store, "embedded", memory.reindexer, lambda: read_progress(db, MEMORY_REINDEX)
        )
        summary = await memory_summary(view)
        pending = await memory.reindexer.pending_count()
    assert (summary.count, summary.archived, summary.mode) == (2, 1, "embedded")
    assert summary.pending == pending
    assert summary.reindex is not None
    assert (summary.reindex.state, summary.reindex.done, summary.reindex.total) == (
        "running",
        4,
        10,
    )


def test_the_memory_page_shows_the_figures(tmp_path: Path) -> None:
    async def deps(db: Database) -> DashboardDeps:
        memory = build_memory(db, MemorySettings())
        await memory.store.store(NewMemory(owner="alice", text="The cat is called Tom."))
        return host_deps(
            memory=MemoryView(memory.store, "off", memory.reindexer), clock=lambda: NOW
        )

    with serving(tmp_path / "t.db", deps, GUEST) as served:
        body = served.client.get("/dashboard/memory").text
    assert "<dt>Memories</dt><dd>1</dd>" in body
    assert "<dt>Recall by meaning</dt><dd>off (words only)</dd>" in body
    assert "<dt>Waiting for a reindex</dt><dd>" in body
    assert "Last reindex" not in body


def test_without_memory_or_skills_the_pages_say_so() -> None:
    from tests.dashboard.host import client

    assert (
        "Memory is not available in this daemon."
        in client(host_deps()).get("/dashboard/memory").text
    )
    tools = client(host_deps()).get("/dashboard/tools").text
    assert "No tool source is configured." in tools
    assert "The skills store is not available in this daemon." in tools
