"""Heal a stored history into a shape every provider accepts.

Older versions of the bot (and any interrupted write) could leave a session's history in
a shape the Anthropic Messages API refuses on every later request: whitespace-only text,
an assistant message with no content, a ``tool_use`` with no ``tool_result`` after it, a
``tool_result`` whose call is gone, a conversation that starts with the assistant.
:func:`repair_history` returns the nearest valid history and counts what it changed; it
is pure and linear in the number of blocks, so it runs before every turn.

A repaired history:

* has no empty or whitespace-only text block, and no message without content;
* starts with a user message, and its roles alternate;
* has ``tool_use`` blocks only in assistant messages and ``tool_result`` blocks only in
  user messages;
* answers every ``tool_use`` at the start of the next user message (a missing answer
  becomes an error result saying the call did not finish) and keeps no ``tool_result``
  that answers nothing in the message before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from thalos_bot.domain.messages import (
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

UNFINISHED_TOOL_RESULT = "This tool call did not finish: the turn was stopped."


@dataclass(frozen=True, slots=True)
class Repaired:
    messages: list[Message]
    fixes: Mapping[str, int] = field(default_factory=dict)
    """What was changed, by kind (``blank_text``, ``empty_messages``, ``merged_messages``,
    ``misplaced_blocks``, ``leading_assistant``, ``dangling_tool_uses``,
    ``orphan_tool_results``, ``reordered_results``); empty when nothing was."""

    @property
    def changed(self) -> bool:
        return bool(self.fixes)


def is_blank(block: Block) -> bool:
    """A text block with nothing but whitespace (the API refuses it)."""
    return isinstance(block, TextBlock) and not block.text.strip()


def without_blank_text(message: Message) -> Message:
    """``message`` minus its empty and whitespace-only text blocks."""
    if not any(is_blank(b) for b in message.content):
        return message
    return Message(message.role, tuple(b for b in message.content if not is_blank(b)))


def repair_history(messages: Sequence[Message]) -> Repaired:
    """The nearest valid history to ``messages`` and what was changed to get there."""
    if _is_valid(messages):
        return Repaired(list(messages))
    fixes: Counter[str] = Counter()
    normalized = _normalize(messages, fixes)
    paired = _pair(normalized, fixes)
    if not fixes:
        return Repaired(list(messages))
    return Repaired(paired, dict(fixes))


def _is_valid(messages: Sequence[Message]) -> bool:
    """The common case, checked without building anything."""
    role: Role | None = None
    pending: set[str] = set()
    for message in messages:
        if not message.content or message.role == role or (role is None and message.role != "user"):
            return False
        role = message.role
        if role == "user":
            if not _valid_user(message.content, pending):
                return False
            pending = set()
            continue
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                pending.add(block.id)
            elif not isinstance(block, TextBlock) or not block.text.strip():
                return False
    return not pending


def _valid_user(content: Sequence[Block], pending: set[str]) -> bool:
    answered: set[str] = set()
    words = False
    for block in content:
        if isinstance(block, ToolResultBlock):
            if words or block.tool_use_id not in pending or block.tool_use_id in answered:
                return False
            answered.add(block.tool_use_id)
        elif (isinstance(block, TextBlock) and block.text.strip()) or isinstance(
            block, ImageBlock | DocumentBlock
        ):
            words = True
        else:
            return False
    return len(answered) == len(pending)


def _normalize(messages: Sequence[Message], fixes: Counter[str]) -> list[tuple[Role, list[Block]]]:
    """Blank text and misplaced blocks dropped, empty messages dropped, consecutive
    messages of one role merged."""
    out: list[tuple[Role, list[Block]]] = []
    for message in messages:
        blocks: list[Block] = []
        for block in message.content:
            if is_blank(block):
                fixes["blank_text"] += 1
            elif _misplaced(block, message.role):
                fixes["misplaced_blocks"] += 1
            else:
                blocks.append(block)
        if not blocks:
            fixes["empty_messages"] += 1
        elif out and out[-1][0] == message.role:
            fixes["merged_messages"] += 1
            out[-1][1].extend(blocks)
        else:
            out.append((message.role, blocks))
    return out


def _misplaced(block: Block, role: Role) -> bool:
    if isinstance(block, ToolUseBlock):
        return role != "assistant"
    if isinstance(block, ImageBlock | DocumentBlock):
        return role != "user"  # only a person sends media
    return isinstance(block, ToolResultBlock) and role != "user"


def _pair(groups: list[tuple[Role, list[Block]]], fixes: Counter[str]) -> list[Message]:
    """Every tool_use answered right after it; no result without its call; user first."""
    out: list[tuple[Role, list[Block]]] = []

    def push(role: Role, blocks: list[Block]) -> None:
        if out and out[-1][0] == role:
            out[-1][1].extend(blocks)  # only after a dropped message: nothing is pending
        else:
            out.append((role, blocks))

    for role, blocks in groups:
        if role == "assistant":
            if not out:
                fixes["leading_assistant"] += 1
                continue
            push(role, blocks)
            continue
        expected = _pending_uses(out)
        push("user", _answer(expected, blocks, fixes))
        if not out[-1][1]:
            out.pop()
            fixes["empty_messages"] += 1
    closing = _answer(_pending_uses(out), [], fixes)
    if closing:
        out.append(("user", closing))
    return [Message(role, tuple(blocks)) for role, blocks in out]


def _pending_uses(out: list[tuple[Role, list[Block]]]) -> list[str]:
    if not out or out[-1][0] != "assistant":
        return []
    return [b.id for b in out[-1][1] if isinstance(b, ToolUseBlock)]


def _answer(expected: list[str], blocks: list[Block], fixes: Counter[str]) -> list[Block]:
    """A user message's blocks with the answers to ``expected`` first: the results it has
    (each once), an error result for each one missing, then everything else."""
    wanted = set(expected)
    results: dict[str, ToolResultBlock] = {}
    others: list[Block] = []
    seen_other = False
    for block in blocks:
        if not isinstance(block, ToolResultBlock):
            others.append(block)
            seen_other = True
        elif block.tool_use_id in wanted and block.tool_use_id not in results:
            if seen_other:
                fixes["reordered_results"] += 1
            results[block.tool_use_id] = block
        else:
            fixes["orphan_tool_results"] += 1
    answers: list[Block] = []
    for use_id in expected:
        found = results.get(use_id)
        if found is None:
            fixes["dangling_tool_uses"] += 1
            found = ToolResultBlock(use_id, UNFINISHED_TOOL_RESULT, is_error=True)
        answers.append(found)
    return answers + others
