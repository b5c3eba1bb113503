"""The console adapter for an interactive terminal: Markdown rendered with rich.

Streamed text is cut into Markdown blocks; a finished block (a paragraph, a list, a
closed code fence) is rendered once and printed above the prompt, while the block still
being written shows as plain text just above the input line. The final text of a turn
is diffed against what was already streamed, so nothing is printed twice.
"""

from __future__ import annotations

import io
import re

import anyio
from rich.console import Console
from rich.markdown import Markdown

from thalos_bot.channels import notices
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.console.blocks import split_blocks
from thalos_bot.console.questions import Questions, approval_question, parse_verdict
from thalos_bot.console.screen import Screen
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest

STYLES = {"info": "\x1b[2m", "warning": "\x1b[33m", "error": "\x1b[31m"}
RESET = "\x1b[0m"


_AUTOLINK = re.compile(r"<(https?://[^\s<>]+)>")
_SAME_TEXT_LINK = re.compile(r"\[(https?://[^\s\]]+)\]\(\1\)")


def plain_autolinks(markdown: str) -> str:
    """``<https://x>`` and ``[https://x](https://x)`` as the bare URL, so a link whose
    text is its URL is not shown twice as ``https://x (https://x)``. Code is left alone."""
    if markdown.lstrip().startswith(("```", "~~~", "    ")):
        return markdown
    parts = markdown.split("`")
    for index in range(0, len(parts), 2):  # even parts are outside inline code
        parts[index] = _SAME_TEXT_LINK.sub(r"\1", _AUTOLINK.sub(r"\1", parts[index]))
    return "`".join(parts)


class _Answer:
    """One turn's text: all that streamed, and how much of it is printed for good."""

    def __init__(self) -> None:
        self.streamed = ""
        self.printed = 0
        self.blocks = 0


class TerminalAdapter:
    def __init__(
        self, screen: Screen, *, channel_id: str = "console", flush_interval: float | None = None
    ) -> None:
        self.channel_id = ChannelId(channel_id)
        self.flush_interval = flush_interval
        self._screen = screen
        self._answers: dict[ConversationId, _Answer] = {}
        self.questions = Questions(screen.redraw)
        screen.question = lambda: self.questions.current
        self.failed_turns = 0
        """Turns that ended in an error (a cancelled one is not a failure)."""

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TurnStarted):
            self._answers[conversation_id] = _Answer()
            self._screen.set_busy(True)
        elif isinstance(event, TextUpdate):
            answer = self._answers.setdefault(conversation_id, _Answer())
            answer.streamed += event.text
            await self._print_finished(answer)
            if event.activity:
                await self._print_rest(answer)
                for activity in event.activity:
                    await self._line(notices.tool_activity(activity), "info")
        elif isinstance(event, TurnCompleted):
            await self._finish(conversation_id, event.text)
        elif isinstance(event, TurnFailed):
            await self._finish(conversation_id, event.partial_text)
            cancelled = event.error.code.value == "cancelled"
            self.failed_turns += 0 if cancelled else 1
            await self._line(notices.turn_failed(event.error), "info" if cancelled else "error")
        elif isinstance(event, Notice):
            await self._line(event.text, event.tone)
        elif isinstance(event, ToolImage):
            size = len(event.data)
            await self._line(notices.tool_image(event.tool, event.media_type, size), "info")

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        """Ask at the prompt; the next line typed answers (anything but y or s is no)."""
        question = approval_question(request)
        try:
            verdict = parse_verdict(await self.questions.ask(question))
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._line(f"{question.rstrip()} — withdrawn, not run", "warning")
            raise
        said = {"approved": "approved", "approved-session": "approved for this session"}
        outcome = said.get(verdict, "denied")
        await self._line(f"{request.tool}: {outcome}", "info")
        return ApprovalAnswer(verdict, "console")

    async def _print_finished(self, answer: _Answer) -> None:
        rest = answer.streamed[answer.printed :]
        split = split_blocks(rest)
        for block in split.finished:
            await self._print_block(answer, block)
        answer.printed += split.tail_start
        self._screen.set_live(answer.streamed[answer.printed :].strip("\n"))

    async def _print_rest(self, answer: _Answer) -> None:
        rest = answer.streamed[answer.printed :]
        answer.printed = len(answer.streamed)
        self._screen.set_live("")
        if rest.strip():
            await self._print_block(answer, rest)

    async def _print_block(self, answer: _Answer, markdown: str) -> None:
        rendered = self._render(markdown)
        if rendered:
            await self._screen.print_above(("\n" if answer.blocks else "") + rendered)
            answer.blocks += 1

    async def _finish(self, conversation_id: ConversationId, full: str) -> None:
        answer = self._answers.pop(conversation_id, _Answer())
        self._screen.set_busy(False)
        if full.startswith(answer.streamed):
            answer.streamed = full
            await self._print_rest(answer)
        else:  # should not happen: the runtime's final text extends what it streamed
            self._screen.set_live("")
            await self._screen.print_above(full + "\n")

    async def _line(self, text: str, tone: str) -> None:
        style = STYLES.get(tone, "") if self._screen.color else ""
        await self._screen.print_above(f"{style}{text}{RESET if style else ''}\n")

    def _render(self, markdown: str) -> str:
        """``markdown`` as terminal text: styled, code highlighted, no trailing blanks."""
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            force_terminal=self._screen.color,
            no_color=not self._screen.color,
            width=self._screen.width,
            highlight=False,
        )
        # Links show their URL, "text (url)": OSC 8 hyperlinks show only the text in
        # a terminal that does not know them, and the URL is what the reader needs.
        console.print(Markdown(plain_autolinks(markdown), code_theme="monokai", hyperlinks=False))
        lines = [line.rstrip(" ") for line in buffer.getvalue().split("\n")]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines) + "\n" if lines else ""
