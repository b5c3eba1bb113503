"""The interactive terminal: finished output scrolls above the prompt, the answer still
being written shows just above the input line, and the input line stays live.

prompt_toolkit owns the bottom of the screen while the prompt runs: text is printed
above it with ``run_in_terminal`` (which hides the prompt, writes, and draws it again),
and the part of the answer still being written is part of the prompt's message, cut to
the last lines that fit, so nothing ever scrolls half-drawn.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TextIO

from prompt_toolkit.application import get_app_or_none, run_in_terminal
from prompt_toolkit.formatted_text import ANSI, AnyFormattedText

PROMPT = "› "
DIM = "\x1b[2m"
RESET = "\x1b[0m"
RESERVED_ROWS = 3
"""Rows kept free under the live text: the input line and a little room."""


class Screen:
    def __init__(self, out: TextIO, *, color: bool) -> None:
        self._out = out
        self.color = color
        self._live = ""
        self.busy = False
        self.answers_done = 0
        """Answers finished so far (the console's Ctrl-C tells "stop it" from "quit")."""
        self.question: Callable[[], str | None] = lambda: None
        """The open question, shown as the prompt instead of the input marker."""

    @property
    def width(self) -> int:
        return max(20, shutil.get_terminal_size().columns)

    async def print_above(self, text: str) -> None:
        """Write ``text`` (which should end with a newline) above the prompt."""
        if not text:
            return
        app = get_app_or_none()
        if app is not None and app.is_running:
            await run_in_terminal(lambda: self._write(text), in_executor=False)
        else:
            self._write(text)

    def set_live(self, text: str) -> None:
        if text == self._live:
            return
        self._live = text
        self._invalidate()

    def set_busy(self, busy: bool) -> None:
        if self.busy and not busy:
            self.answers_done += 1
        self.busy = busy
        self._invalidate()

    def message(self) -> AnyFormattedText:
        """The prompt's message: the live text (cut to fit), then the input marker (or the
        open question)."""
        question = self.question()
        marker = PROMPT if question is None else question
        app = get_app_or_none()
        if app is not None and app.is_done:
            # The last drawing of an accepted line stays in the scrollback: it shows the
            # line typed, not the answer being written (that is printed once, whole,
            # when it is finished, and live again under the next prompt).
            return ANSI(marker)
        if not self._live:
            if question is not None:
                return ANSI(marker)
            return ANSI(f"{DIM}…{RESET} " if self.busy and self.color else PROMPT)
        rows = max(1, shutil.get_terminal_size().lines - RESERVED_ROWS)
        lines = _wrap(self._live, self.width)[-rows:]
        return ANSI("\n".join(lines) + "\n" + marker)

    def redraw(self) -> None:
        self._invalidate()

    def _invalidate(self) -> None:
        app = get_app_or_none()
        if app is not None and app.is_running:
            app.invalidate()

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()


def _wrap(text: str, width: int) -> list[str]:
    """Hard-wrap to ``width`` columns, so the number of rows drawn is known."""
    rows: list[str] = []
    for line in text.split("\n"):
        rows.extend(line[i : i + width] for i in range(0, max(len(line), 1), width))
    return rows
