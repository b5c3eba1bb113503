"""What a turn sends the model besides the history: the system prompt and its extras.

Extras come from :class:`PromptContributor` s (recalled memories, the skills catalogue).
History that no longer fits the model's context window is trimmed oldest-turn-first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import Info
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.base import SystemPart
from thalos_bot.tools.types import ToolSpec


@dataclass(frozen=True, slots=True)
class Contribution:
    parts: Sequence[SystemPart] = ()
    events: Sequence[Info] = field(default_factory=tuple)


class PromptContributor(Protocol):
    async def contribute(
        self,
        agent: AgentDefinition,
        caller: SecurityContext,
        session_id: SessionId,
        user_text: str,
    ) -> Contribution:
        """Parts to add to the system prompt for this turn. Must not raise: a failure
        becomes an ``Info`` event and no parts."""
        ...


CHARS_PER_TOKEN = 4
"""A deliberately pessimistic estimate for English and code (Claude averages ~3.5-4)."""


def estimate_tokens(messages: Sequence[Message]) -> int:
    chars = 0
    for message in messages:
        chars += 16
        for block in message.content:
            if isinstance(block, TextBlock):
                chars += len(block.text)
            elif isinstance(block, ToolUseBlock):
                chars += len(block.name) + len(str(block.input)) + 32
            elif isinstance(block, ToolResultBlock):
                chars += len(block.content) + 32
    return chars // CHARS_PER_TOKEN + 1


def estimate_fixed_tokens(system: Sequence[SystemPart], tools: Sequence[ToolSpec]) -> int:
    chars = sum(len(p.text) for p in system)
    chars += sum(len(t.name) + len(t.description) + len(str(t.input_schema)) for t in tools)
    return chars // CHARS_PER_TOKEN + 1


@dataclass(frozen=True, slots=True)
class Trimmed:
    messages: list[Message]
    dropped_turns: int
    dropped_messages: int
    estimated_tokens: int


def trim_history(messages: Sequence[Message], budget_tokens: int) -> Trimmed:
    """Drop whole turns from the front until the estimate fits ``budget_tokens``.

    A turn starts at a user message with text, so the kept history always begins with
    the person's words and never with a tool result whose call was dropped. The last
    turn is always kept, even when it alone is over budget.
    """
    starts = [i for i, m in enumerate(messages) if m.starts_turn]
    kept = list(messages)
    dropped_turns = 0
    estimate = estimate_tokens(kept)
    for start in starts[1:]:
        if estimate <= budget_tokens:
            break
        kept = list(messages[start:])
        dropped_turns += 1
        estimate = estimate_tokens(kept)
    return Trimmed(kept, dropped_turns, len(messages) - len(kept), estimate)
