"""Keeping a long conversation inside the model's context window: the pure parts.

Every request is prepared from the history in a few linear passes, none of which
re-reads what an earlier pass already measured:

* **masking** — old, large tool results are replaced in the request by a stub that
  names the tool, gives the size and a short head; the last few tool rounds stay whole;
* **sizing** — one pass of character counts gives a prefix sum and the turn starts,
  so the size of any tail is a subtraction;
* **the cut** — when the request would pass the threshold, the history is cut at a
  turn start (a user message with the person's words and no tool result, so a
  ``tool_use`` and its ``tool_result`` are never separated), keeping the most recent
  turns verbatim; what lies before the cut is summarized by the model (or, when that
  fails, dropped).

Nothing here does I/O; :class:`thalos_bot.runtime.window.ContextWindow` drives it. The
passes over the whole history are step generators (``*_steps``), so that the window can
run them on the event loop with a checkpoint every few hundred messages; the plain
functions run them to the end in one go.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from thalos_bot.domain.messages import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.media.view import media_chars, placeholder, without_old_media
from thalos_bot.providers.base import ModelRequest
from thalos_bot.storage.protocol import ContextState
from thalos_bot.tools.types import ToolSpec

CHARS_PER_TOKEN = 4
"""A character estimate for English and code (Claude averages ~3.5-4); the provider's
reported prompt size calibrates it (see :func:`calibrated_tokens`)."""

MESSAGE_OVERHEAD_CHARS = 16
BLOCK_OVERHEAD_CHARS = 32
MASK_HEAD_CHARS = 200
MASK_CACHE_SIZE = 4096
STEP_MESSAGES = 256
"""The step generators (``*_steps``) yield after this many messages, so that a caller on
the event loop can let other conversations run in between (about a millisecond)."""

T = TypeVar("T")
Steps = Generator[None, None, T]
"""A computation done in steps: ``next()`` runs one step; the return value is the result."""
TRANSCRIPT_ARGUMENT_CHARS = 300
TRANSCRIPT_RESULT_CHARS = 1500
SUMMARY_PREFIX = (
    "Summary of the earlier conversation (older messages were condensed to save space):"
)


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """``[provider] compaction``: when and how the history is condensed."""

    enabled: bool = True
    """False: drop the oldest turns instead of summarizing them."""
    threshold: float = 0.8
    """Compact when a request would pass this share of the context window."""
    keep_recent_turns: int = 6
    """Turns (the current one included) that stay verbatim when compacting."""
    keep_tool_rounds: int = 3
    """The last tool rounds whose results are always sent whole."""
    mask_tool_results_over: int = 2000
    """Older tool results longer than this (characters) are masked in the request."""
    summary_max_tokens: int = 2048
    """The longest summary the model may write."""
    keep_media_turns: int = 2
    """Images and PDFs of the last this many turns are sent; older ones are replaced
    by a short placeholder in the request (the store keeps them)."""


# --- turns and sizes -----------------------------------------------------------------------


def is_turn_start(message: Message) -> bool:
    """A user message that carries the person's words and no tool result: the only
    place a history may be cut."""
    if message.role != "user":
        return False
    words = False  # measure() repeats this test inline
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            return False
        if (isinstance(block, TextBlock) and block.text and not block.text.isspace()) or isinstance(
            block, ImageBlock | DocumentBlock
        ):
            words = True
    return words


def message_chars(message: Message) -> int:
    chars = MESSAGE_OVERHEAD_CHARS
    for block in message.content:
        if isinstance(block, TextBlock):
            chars += len(block.text)
        elif isinstance(block, ToolUseBlock):
            chars += len(block.name) + len(str(block.input)) + BLOCK_OVERHEAD_CHARS
        elif isinstance(block, ImageBlock | DocumentBlock):
            chars += media_chars(block) + BLOCK_OVERHEAD_CHARS
        else:
            chars += len(block.content) + BLOCK_OVERHEAD_CHARS
    return chars


def fixed_chars(system: Sequence[SystemPart], tools: Sequence[ToolSpec]) -> int:
    """What every request carries besides the history: system prompt and tools."""
    chars = sum(len(p.text) for p in system)
    chars += sum(len(t.name) + len(t.description) + len(str(t.input_schema)) for t in tools)
    return chars


def tokens(chars: int) -> int:
    return chars // CHARS_PER_TOKEN + 1


@dataclass(frozen=True, slots=True)
class Sizes:
    """Character counts of a message list, measured once."""

    prefix: list[int]
    """``prefix[i]`` is the size of ``messages[:i]``."""
    starts: list[int]
    """The indexes of the turn starts, in order."""

    @property
    def total(self) -> int:
        return self.prefix[-1]

    def tail(self, index: int) -> int:
        """The size of ``messages[index:]``."""
        return self.prefix[-1] - self.prefix[index]


def finish(steps: Steps[T]) -> T:
    """Run a step generator to its end and return its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: T = done.value
            return result


def measure(messages: Sequence[Message]) -> Sizes:
    return finish(measure_steps(messages))


def measure_steps(messages: Sequence[Message]) -> Steps[Sizes]:
    """Sizes and turn starts in one pass (the same counts as :func:`message_chars` and
    :func:`is_turn_start`, written out because this loop runs over every message)."""
    prefix = [0] * (len(messages) + 1)
    starts: list[int] = []
    running = 0
    for index, message in enumerate(messages):
        chars = MESSAGE_OVERHEAD_CHARS
        start = message.role == "user"
        words = False
        for block in message.content:
            kind = type(block)
            if kind is TextBlock:
                text = block.text  # type: ignore[union-attr]
                chars += len(text)
                if not words and text and not text.isspace():
                    words = True
            elif kind is ToolResultBlock:
                chars += len(block.content) + BLOCK_OVERHEAD_CHARS  # type: ignore[union-attr]
                start = False
            elif kind is ImageBlock or kind is DocumentBlock:
                chars += media_chars(block) + BLOCK_OVERHEAD_CHARS  # type: ignore[arg-type]
                words = True
            else:
                use: ToolUseBlock = block  # type: ignore[assignment]
                chars += len(use.name) + len(str(use.input)) + BLOCK_OVERHEAD_CHARS
        running += chars
        prefix[index + 1] = running
        if start and words:
            starts.append(index)
        if index % STEP_MESSAGES == STEP_MESSAGES - 1:
            yield
    return Sizes(prefix, starts)


def choose_cut(sizes: Sizes, *, keep_recent_turns: int, room_chars: int) -> int | None:
    """The index of the first message to keep, or None when there is nothing to cut.

    Keeps ``keep_recent_turns`` turns when they fit in ``room_chars``, fewer when they
    do not, and always the last turn. The cut is always a turn start after the first.
    """
    starts = sizes.starts
    if len(starts) < 2:  # the current turn and at least one before it
        return None
    last = len(starts) - 1
    position = max(1, len(starts) - keep_recent_turns)
    while position < last and sizes.tail(starts[position]) > room_chars:
        position += 1
    return starts[position]


def first_turn_start(messages: Sequence[Message]) -> int:
    """The index of the first turn start (``len(messages)`` when there is none)."""
    return next((i for i, m in enumerate(messages) if is_turn_start(m)), len(messages))


def calibrated_tokens(estimate: int, state: ContextState) -> int:
    """The prompt size of a request we estimate at ``estimate`` tokens: what the
    provider reported for the last request plus our estimate of what is new (scaled
    by the measured ratio when the request shrank). The bare estimate when nothing
    was reported yet."""
    if state.input_tokens <= 0 or state.estimated_tokens <= 0:
        return estimate
    if estimate >= state.estimated_tokens:
        return state.input_tokens + estimate - state.estimated_tokens
    return estimate * state.input_tokens // state.estimated_tokens


def reported_scale(state: ContextState) -> float:
    """Real tokens per estimated token, from the last report (1.0 without one)."""
    if state.input_tokens <= 0 or state.estimated_tokens <= 0:
        return 1.0
    return min(4.0, max(0.25, state.input_tokens / state.estimated_tokens))


# --- masking -------------------------------------------------------------------------------


def _is_round(message: Message) -> bool:
    """A tool round's results (the API requires them first in their user message)."""
    content = message.content
    return message.role == "user" and bool(content) and type(content[0]) is ToolResultBlock


def _round_cutoff(messages: Sequence[Message], keep_rounds: int) -> int:
    """The index of the oldest of the last ``keep_rounds`` tool rounds (0 when there
    are no more than that), found from the end so that only the tail is read."""
    if keep_rounds <= 0:
        return len(messages)
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        if _is_round(messages[index]):
            seen += 1
            if seen == keep_rounds:
                return index
    return 0


@functools.lru_cache(maxsize=MASK_CACHE_SIZE)
def masked_result(block: ToolResultBlock, name: str) -> ToolResultBlock:
    """The stub that stands for ``block`` (cached: every request masks the same old
    results again, and a block's hash is its strings', which Python keeps)."""
    head = block.content[:MASK_HEAD_CHARS].rstrip()
    stub = (
        f"[Output of {name}, {len(block.content):,} characters, left out of this request "
        f"to save space; call the tool again if you need it. It began: {head}…]"
    )
    return ToolResultBlock(block.tool_use_id, stub, block.is_error)


def mask_tool_results(
    messages: Sequence[Message], *, keep_rounds: int, over_chars: int
) -> list[Message]:
    """``messages`` with the results of all but the last ``keep_rounds`` tool rounds
    masked when longer than ``over_chars``. Messages that change are new objects; the
    others are shared."""
    return finish(mask_steps(messages, keep_rounds=keep_rounds, over_chars=over_chars))


def mask_steps(
    messages: Sequence[Message], *, keep_rounds: int, over_chars: int
) -> Steps[list[Message]]:
    out = list(messages)
    for index in range(_round_cutoff(messages, keep_rounds)):
        if index % STEP_MESSAGES == STEP_MESSAGES - 1:
            yield
        message = messages[index]
        if not _is_round(message) or not any(
            isinstance(b, ToolResultBlock) and len(b.content) > over_chars for b in message.content
        ):
            continue
        names = {u.id: u.name for u in messages[index - 1].tool_uses} if index else {}
        out[index] = Message(
            "user",
            tuple(
                masked_result(b, names.get(b.tool_use_id, "a tool"))
                if isinstance(b, ToolResultBlock) and len(b.content) > over_chars
                else b
                for b in message.content
            ),
        )
    return out


def view_steps(
    messages: Sequence[Message], policy: CompactionPolicy
) -> Steps[tuple[list[Message], Sizes]]:
    """``messages`` masked, and their sizes: what a request is planned on."""
    masked = yield from mask_steps(
        messages, keep_rounds=policy.keep_tool_rounds, over_chars=policy.mask_tool_results_over
    )
    masked = without_old_media(masked, keep_turns=policy.keep_media_turns)
    sizes = yield from measure_steps(masked)
    return masked, sizes


# --- the summary ---------------------------------------------------------------------------


def with_summary(summary: str, messages: Sequence[Message]) -> list[Message]:
    """``messages`` preceded by the summary, as the first user text block; merged into
    the first message when that is the person's words, so roles still alternate and
    the request still begins with the user."""
    if not summary.strip():
        return list(messages)
    block = TextBlock(f"{SUMMARY_PREFIX}\n\n{summary.strip()}")
    if messages and is_turn_start(messages[0]):
        return [Message("user", (block, *messages[0].content)), *messages[1:]]
    return [Message("user", (block,)), *messages]


def summary_chars(summary: str) -> int:
    return len(SUMMARY_PREFIX) + len(summary) + 2 if summary.strip() else 0


SUMMARY_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a person and an AI "
    "assistant, so that the assistant can carry on without the older messages. Keep what "
    "the assistant will need: the person's goals, preferences and facts about them; "
    "decisions made and why; open questions and unfinished tasks; names, numbers, dates, "
    "file paths and other specifics; what tools found. Leave out greetings and anything "
    "later superseded. Write compact prose or short lists in the conversation's language, "
    "in the third person. Output only the summary."
)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arguments(arguments: Mapping[str, Any]) -> str:
    raw = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    return _clip(raw, TRANSCRIPT_ARGUMENT_CHARS)


def transcript(messages: Sequence[Message], max_chars: int) -> str:
    """The messages as plain text for the summarizer (tool calls shortened); at most
    ``max_chars``, keeping the newest part when it is longer."""
    return finish(transcript_steps(messages, max_chars))


def transcript_steps(messages: Sequence[Message], max_chars: int) -> Steps[str]:
    parts: list[str] = []
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        if index % STEP_MESSAGES == STEP_MESSAGES - 1:
            yield
        speaker = "User" if message.role == "user" else "Assistant"
        for block in message.content:
            if isinstance(block, TextBlock):
                if block.text.strip():
                    parts.append(f"{speaker}: {block.text.strip()}")
            elif isinstance(block, ToolUseBlock):
                names[block.id] = block.name
                parts.append(f"Assistant called {block.name} with {_arguments(block.input)}")
            elif isinstance(block, ImageBlock | DocumentBlock):
                parts.append(f"{speaker} sent: {placeholder(block).text}")
            else:
                name = names.get(block.tool_use_id, "a tool")
                verb = "failed with" if block.is_error else "returned"
                content = _clip(block.content.strip(), TRANSCRIPT_RESULT_CHARS)
                parts.append(f"{name} {verb}: {content}")
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        text = "[The earliest part is left out.]\n\n" + text[len(text) - max_chars :]
    return text


def summary_request(
    *,
    model: str,
    max_output_tokens: int,
    context_window: int,
    previous: str,
    messages: Sequence[Message],
) -> ModelRequest:
    """One text-only request asking the model to fold ``messages`` into ``previous``."""
    return finish(
        summary_request_steps(
            model=model,
            max_output_tokens=max_output_tokens,
            context_window=context_window,
            previous=previous,
            messages=messages,
        )
    )


def summary_request_steps(
    *,
    model: str,
    max_output_tokens: int,
    context_window: int,
    previous: str,
    messages: Sequence[Message],
) -> Steps[ModelRequest]:
    room = (context_window - max_output_tokens) * CHARS_PER_TOKEN * 9 // 10
    room -= len(SUMMARY_INSTRUCTIONS) + len(previous) + 500
    intro = (
        f"The summary so far:\n\n{previous.strip()}\n\nThe conversation that followed:"
        if previous.strip()
        else "The conversation:"
    )
    body = yield from transcript_steps(messages, max(1000, room))
    ask = (
        "Write the updated summary of everything above."
        if previous.strip()
        else ("Write the summary of the conversation above.")
    )
    return ModelRequest(
        model=model,
        max_output_tokens=max_output_tokens,
        system=[SystemPart(SUMMARY_INSTRUCTIONS)],
        messages=[Message.user(f"{intro}\n\n{body}\n\n{ask}")],
        tools=(),
        allow_tools=False,
    )
