"""A deterministic model provider shipped in the package, for tests and offline demos.

A script is a queue of replies, one per model call. A reply is a sequence of steps::

    provider = ScriptedProvider([
        [Say("Let me ", "check."), CallTool("calc__add", {"a": 1, "b": 2})],
        [Say("It is ", "3.", delay=0.05)],
        [Say("partial"), Fail("the provider fell over")],
        [Say("thinking..."), Hang()],          # streams, then waits until cancelled
        [Await(gate.wait), Say("go")],         # pauses until a test sets an event
    ])

A reply may also be a function of the :class:`ModelRequest`. When the queue is empty the
provider falls back to ``default`` (by default: echo the last user message, word by word),
so ``[provider] kind = "scripted"`` gives an offline demo that needs no API key.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from thalos_bot.media.view import media_chars
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelRequest,
    ModelTextDelta,
    ModelToolUse,
    ModelUsage,
    ProviderError,
)


@dataclass(frozen=True, slots=True)
class Say:
    """Stream these text chunks, waiting ``delay`` seconds before each."""

    chunks: tuple[str, ...]
    delay: float = 0.0

    def __init__(self, *chunks: str, delay: float = 0.0) -> None:
        object.__setattr__(self, "chunks", chunks)
        object.__setattr__(self, "delay", delay)


@dataclass(frozen=True, slots=True)
class CallTool:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Raise a :class:`ProviderError` at this point of the stream."""

    message: str = "The scripted provider failed on purpose."
    fallback: bool = False
    """As a 529 or an unreachable server: another provider may answer."""


@dataclass(frozen=True, slots=True)
class Hang:
    """Stop streaming and wait until cancelled (or ``seconds`` pass)."""

    seconds: float = math.inf


@dataclass(frozen=True, slots=True)
class Await:
    """Await ``func()`` at this point of the stream (tests use it to pause on an event)."""

    func: Callable[[], Awaitable[object]]


Step = Say | CallTool | Fail | Hang | Await
Reply = Sequence[Step]
ReplyFactory = Callable[[ModelRequest], Reply]


def echo_reply(request: ModelRequest, delay: float = 0.0) -> Reply:
    """Echo the last user text back, one word per chunk."""
    last = next((m.text for m in reversed(request.messages) if m.role == "user" and m.text), "")
    words = ("You said: " + last).split(" ")
    return [Say(*(w if i == 0 else " " + w for i, w in enumerate(words)), delay=delay)]


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _prompt_tokens(request: ModelRequest) -> int:
    """Roughly what a real API would report: every block counts, tool traffic too."""
    chars = sum(len(p.text) for p in request.system)
    for message in request.messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                chars += len(block.text)
            elif isinstance(block, ToolUseBlock):
                chars += len(block.name) + len(str(block.input))
            elif isinstance(block, ToolResultBlock):
                chars += len(block.content)
            else:
                chars += media_chars(block)
    return max(1, chars // 4)


class ScriptedProvider:
    """A :class:`~thalos_bot.providers.base.ModelProvider` that plays a script."""

    name = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply | ReplyFactory] = (),
        *,
        default: ReplyFactory | None = echo_reply,
    ) -> None:
        self._queue: deque[Reply | ReplyFactory] = deque(replies)
        self._default = default
        self._ids = itertools.count(1)
        self.requests: list[ModelRequest] = []

    def push(self, *replies: Reply | ReplyFactory) -> None:
        self._queue.extend(replies)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _next_reply(self, request: ModelRequest) -> Reply:
        if self._queue:
            item = self._queue.popleft()
        elif self._default is not None:
            item = self._default
        else:
            raise ProviderError("The scripted provider has no reply left.")
        return item(request) if callable(item) else item

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        self.requests.append(request)
        reply = self._next_reply(request)
        yield ModelUsage(TokenUsage(input_tokens=_prompt_tokens(request)))
        blocks: list[Block] = []
        text = ""
        for step in reply:
            if isinstance(step, Say):
                for chunk in step.chunks:
                    if step.delay > 0:
                        await anyio.sleep(step.delay)
                    text += chunk
                    yield ModelTextDelta(chunk)
            elif isinstance(step, CallTool):
                if text:
                    blocks.append(TextBlock(text))
                    text = ""
                block = ToolUseBlock(
                    step.id or f"toolu_scripted_{next(self._ids)}", step.name, dict(step.arguments)
                )
                blocks.append(block)
                yield ModelToolUse(block)
            elif isinstance(step, Fail):
                raise ProviderError(step.message, fallback=step.fallback)
            elif isinstance(step, Await):
                await step.func()
            else:
                await anyio.sleep(step.seconds)
        if text:
            blocks.append(TextBlock(text))
        output = sum(_estimate_tokens(b.text) for b in blocks if isinstance(b, TextBlock))
        yield ModelUsage(TokenUsage(output_tokens=output))
        stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
        yield ModelDone(Message("assistant", tuple(blocks)), stop)

    async def aclose(self) -> None:
        return None
