"""The :class:`ModelProvider` seam: one model call, streamed, with tools."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.messages import Message, ToolUseBlock
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.media.store import StoredMedia
from thalos_bot.tools.types import ToolSpec


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    max_output_tokens: int
    system: Sequence[SystemPart]
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    allow_tools: bool = True
    """False asks the model to answer in text only (``tool_choice: none``)."""
    media: Mapping[str, StoredMedia] = field(default_factory=dict)
    """The bytes of the media blocks in ``messages``, by hash (read by the runtime)."""


@dataclass(frozen=True, slots=True)
class ModelTextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ModelToolUse:
    """A complete tool call, emitted once its arguments have fully arrived."""

    block: ToolUseBlock


@dataclass(frozen=True, slots=True)
class ModelUsage:
    usage: TokenUsage
    estimated: bool = False
    """Counted by us: the server reported no usage."""
    model: str = ""
    """The model that spent it, when not the request's (a fallback member's)."""


@dataclass(frozen=True, slots=True)
class ModelFallback:
    """The provider asked first could not answer; ``provider`` (``model``) answers."""

    provider: str
    model: str
    failed: str
    """The id of the provider that could not answer."""


@dataclass(frozen=True, slots=True)
class ModelDone:
    """The response is complete. ``message`` is the whole assistant message."""

    message: Message
    stop_reason: str


ModelEvent = ModelTextDelta | ModelToolUse | ModelUsage | ModelDone | ModelFallback


class ProviderError(Exception):
    """A model call failed. ``user_message`` is ours and safe to show; the raw cause goes
    to the log only."""

    def __init__(
        self,
        user_message: str,
        *,
        retryable: bool = False,
        fallback: bool = False,
        too_long: bool = False,
        window: int | None = None,
    ) -> None:
        super().__init__(user_message)
        self.user_message = user_message
        self.retryable = retryable
        self.fallback = fallback
        """Another provider may answer: rate limited, overloaded, a 5xx, unreachable."""
        self.too_long = too_long
        """The server refused the prompt as longer than its context window."""
        self.window = window
        """The window the refusal named, in tokens, when it named one."""


class ModelProvider(Protocol):
    name: str

    def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream one response. Ends with exactly one :class:`ModelDone`, or raises
        :class:`ProviderError`."""
        ...

    async def aclose(self) -> None: ...
