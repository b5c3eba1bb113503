"""Questions put to the person at the terminal: the next line typed answers the first one.

The prompt stays live while an answer is written; when a tool call waits for approval the
prompt becomes the question (``Allow fs__write_file {"path": …}? [y]es / [s]ession /
[N]o``), and the line typed next answers it instead of going to the pump. Several calls
waiting at once are asked one after the other. Withdrawing a question (a timeout,
``/cancel``) takes it off the prompt.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from thalos_bot.tools.approval import ApprovalRequest, Verdict

ANSWERS: dict[str, Verdict] = {
    "y": "approved",
    "yes": "approved",
    "s": "approved-session",
    "session": "approved-session",
}
"""Anything else, an empty line included, is no."""


def approval_question(request: ApprovalRequest) -> str:
    return f"Allow {request.tool} {request.preview}? [y]es / [s]ession / [N]o "


def parse_verdict(line: str) -> Verdict:
    return ANSWERS.get(line.strip().lower(), "denied")


@dataclass(slots=True)
class _Question:
    text: str
    answered: anyio.Event = field(default_factory=anyio.Event)
    reply: str = ""


class Questions:
    """The queue of open questions; ``changed`` redraws the prompt."""

    def __init__(self, changed: Callable[[], None] = lambda: None) -> None:
        self._open: deque[_Question] = deque()
        self.changed = changed

    @property
    def current(self) -> str | None:
        return self._open[0].text if self._open else None

    async def ask(self, text: str) -> str:
        """Wait for the line that answers ``text``."""
        question = _Question(text)
        self._open.append(question)
        self.changed()
        try:
            await question.answered.wait()
            return question.reply
        finally:
            if question in self._open:
                self._open.remove(question)
            self.changed()

    def answer(self, line: str) -> bool:
        """Give ``line`` to the first open question; False when none is open."""
        if not self._open:
            return False
        question = self._open.popleft()
        question.reply = line
        question.answered.set()
        return True
