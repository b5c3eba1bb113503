"""The console adapter: renders deliveries as text on a terminal or a pipe.

Streamed text is written as it arrives; the final text of a turn is diffed against what
was already written, so nothing is printed twice and nothing is missing.
"""

from __future__ import annotations

from typing import TextIO

from thalos_bot.channels import notices
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed
from thalos_bot.domain.ids import ChannelId, ConversationId

DIM = "\x1b[2m"
YELLOW = "\x1b[33m"
RED = "\x1b[31m"
RESET = "\x1b[0m"


class ConsoleAdapter:
    def __init__(
        self,
        out: TextIO,
        *,
        color: bool,
        channel_id: str = "console",
        flush_interval: float | None = None,
    ) -> None:
        self.channel_id = ChannelId(channel_id)
        self.flush_interval = flush_interval
        self._out = out
        self._color = color
        self._rendered: dict[ConversationId, str] = {}
        self._at_line_start = True
        self.failed_turns = 0
        """Turns that ended in an error (a cancelled one is not a failure)."""

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TurnStarted):
            self._rendered[conversation_id] = ""
        elif isinstance(event, TextUpdate):
            self._stream(conversation_id, event.text)
            for activity in event.activity:
                self._line(notices.tool_activity(activity), DIM)
        elif isinstance(event, TurnCompleted):
            self._finish(conversation_id, event.text)
        elif isinstance(event, TurnFailed):
            self._finish(conversation_id, event.partial_text)
            cancelled = event.error.code.value == "cancelled"
            self.failed_turns += 0 if cancelled else 1
            style = DIM if cancelled else RED
            self._line(notices.turn_failed(event.error), style)
        elif isinstance(event, Notice):
            self._line(event.text, {"info": DIM, "warning": YELLOW, "error": RED}[event.tone])
        elif isinstance(event, ToolImage):
            self._line(notices.tool_image(event.tool, event.media_type, len(event.data)), DIM)
        self._out.flush()

    def _stream(self, conversation_id: ConversationId, text: str) -> None:
        if not text:
            return
        self._rendered[conversation_id] = self._rendered.get(conversation_id, "") + text
        self._write(text)

    def _finish(self, conversation_id: ConversationId, full: str) -> None:
        shown = self._rendered.pop(conversation_id, "")
        if full.startswith(shown):
            self._write(full[len(shown) :])
        else:  # should not happen: the runtime's final text extends what it streamed
            self._line(full)
        if not self._at_line_start:
            self._write("\n")

    def _line(self, text: str, style: str = "") -> None:
        if not self._at_line_start:
            self._write("\n")
        if self._color and style:
            self._write(f"{style}{text}{RESET}\n")
        else:
            self._write(text + "\n")

    def _write(self, text: str) -> None:
        if text:
            self._out.write(text)
            self._at_line_start = text.endswith("\n")
