"""The resume line: a session under ``idle_timeout = "off"`` never goes idle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from thalos_bot.cli.chat_intro import CONSOLE, banner, resume_line
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.config.models import Settings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.storage.conversations import Binding
from thalos_bot.storage.memory_conversations import MemoryConversationMap

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


async def _bound(idle_for: timedelta) -> MemoryConversationMap:
    conversations = MemoryConversationMap()
    await conversations.bind(
        Binding(*CONSOLE, SessionId("s1"), AgentId("assistant"), NOW - idle_for)
    )
    return conversations


def _catalog() -> AgentCatalog:
    return AgentCatalog([AgentDefinition(AgentId("assistant"), "Assistant", "", "")])


async def test_a_session_older_than_the_idle_timeout_is_not_continued() -> None:
    conversations = await _bound(timedelta(days=3))
    assert await resume_line(conversations, _catalog(), 7200.0, now=NOW) is None


async def test_with_idle_timeout_off_any_old_session_is_continued() -> None:
    conversations = await _bound(timedelta(days=3))
    line = await resume_line(conversations, _catalog(), None, now=NOW)
    assert line == "Continuing your conversation with Assistant from 3 days ago; /new starts fresh."


def test_the_banner_without_a_key_points_at_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    loaded = LoadedConfig(Settings(), None, tmp_path)
    text = banner(loaded, tmp_path / "chat.log", offline=False)
    assert "ANTHROPIC_API_KEY is not set" in text
    assert "--offline" in text
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert "--offline" not in banner(loaded, tmp_path / "chat.log", offline=False)
