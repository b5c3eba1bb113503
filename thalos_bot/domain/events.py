"""Agent events: what a running turn tells the outside world.

Every stream of events for a turn ends in exactly one terminal event,
:class:`TurnCompleted` or :class:`TurnFailed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from thalos_bot.domain.errors import AgentError
from thalos_bot.domain.ids import SessionId

ToolOutcome = Literal["ok", "error", "refused", "cancelled"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    call_id: str
    name: str
    arguments: str
    outcome: ToolOutcome
    duration_s: float


@dataclass(frozen=True, slots=True)
class TextDelta:
    session_id: SessionId
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    session_id: SessionId
    call_id: str
    name: str
    arguments: str
    kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    session_id: SessionId
    call_id: str
    name: str
    arguments: str
    outcome: ToolOutcome
    duration_s: float
    kind: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(frozen=True, slots=True)
class Usage:
    session_id: SessionId
    usage: TokenUsage
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class Info:
    """Something a part of the runtime wants recorded: ``name`` is a stable event name
    (``memory-recalled``, ``context-compacted``, ...), ``data`` small key/value facts."""

    session_id: SessionId
    name: str
    data: dict[str, str | int | float | bool | list[str]] = field(default_factory=dict)
    kind: Literal["info"] = "info"


@dataclass(frozen=True, slots=True)
class ToolImage:
    """An image a tool produced during the turn. The model reads only a placeholder;
    the channel shows the user the image once the turn's answer is out."""

    session_id: SessionId
    tool: str
    media_type: str
    data: bytes = field(repr=False)
    kind: Literal["tool_image"] = "tool_image"

    @property
    def name(self) -> str:
        """A file name for it: the tool's, with the type's extension."""
        return f"{self.tool.replace('__', '-')}.{self.media_type.rsplit('/', 1)[-1]}"


@dataclass(frozen=True, slots=True)
class VoiceClip:
    """The answer read aloud (or one part of a long one), sent after the answer's text
    as the platform's voice message."""

    session_id: SessionId
    media_type: str
    """``audio/ogg`` (OGG/Opus) for a voice message; another type is sent as audio."""
    data: bytes = field(repr=False)
    duration: float | None = None
    """Seconds, when the engine says."""
    part: int = 1
    parts: int = 1
    waveform: tuple[int, ...] = ()
    """Loudness, 0..255, evenly over the clip (what a voice message draws; empty when
    the clip is not OGG/Opus)."""
    turn: str | None = None
    """The key of the turn's answer row in the outbox, when it has one: the clip is
    then kept in the outbox too (its row's key is this and the part)."""
    kind: Literal["voice_clip"] = "voice_clip"

    @property
    def name(self) -> str:
        extension = {"audio/ogg": "ogg", "audio/mpeg": "mp3"}.get(self.media_type, "audio")
        suffix = f"-{self.part}" if self.parts > 1 else ""
        return f"answer{suffix}.{extension}"

    @property
    def voice(self) -> bool:
        """OGG/Opus: what Telegram, Matrix and Discord play as a voice message."""
        return self.media_type == "audio/ogg"


@dataclass(frozen=True, slots=True)
class TurnCompleted:
    session_id: SessionId
    text: str
    usage: TokenUsage
    tool_calls: tuple[ToolCallRecord, ...]
    elapsed_s: float
    kind: Literal["turn_completed"] = "turn_completed"
    delivery: str | None = None
    """The key of the outbox row written with the turn, when the turn was asked to keep
    its final (:attr:`~thalos_bot.runtime.protocol.TurnRequest.deliver_to`): the final
    reaches its channel through that row, exactly once."""


@dataclass(frozen=True, slots=True)
class TurnFailed:
    session_id: SessionId
    error: AgentError
    partial_text: str = ""
    usage: TokenUsage = TokenUsage()
    tool_calls: tuple[ToolCallRecord, ...] = ()
    elapsed_s: float = 0.0
    kind: Literal["turn_failed"] = "turn_failed"


TerminalEvent = TurnCompleted | TurnFailed
AgentEvent = (
    TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | Usage
    | Info
    | ToolImage
    | TurnCompleted
    | TurnFailed
)


def is_terminal(event: AgentEvent) -> bool:
    return isinstance(event, TurnCompleted | TurnFailed)
