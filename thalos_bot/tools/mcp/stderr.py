"""Keep the last few KiB a server subprocess writes to stderr, for the failure log and
the reason ``thalos-bot tools``, ``doctor`` and ``/status`` show.

The subprocess writes into a pipe; a task drains it (so a chatty server never blocks on
a full pipe) and keeps only the tail.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio

_CHUNK = 65536
EXCERPT_LINES = 6
EXCERPT_CHARS = 600
EXCERPT_LINE_CHARS = 200


class StderrTail:
    """Captures a subprocess's stderr; :meth:`text` gives its last ``limit`` bytes."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._read_fd: int | None = None

    @asynccontextmanager
    async def capture(self) -> AsyncIterator[TextIO]:
        """Yield a file to pass as the subprocess's stderr; drain it until exit."""
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd = read_fd
        writer = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._drain)
                try:
                    yield writer
                finally:
                    tg.cancel_scope.cancel()
        finally:
            writer.close()
            self._read_available()
            self._read_fd = None
            os.close(read_fd)

    def text(self, max_lines: int = 20) -> str:
        """The captured tail: at most ``max_lines`` lines, stripped."""
        self._read_available()
        lines = self._buffer.decode("utf-8", errors="replace").strip().splitlines()
        return "\n".join(lines[-max_lines:])

    async def _drain(self) -> None:
        while self._read_fd is not None:
            await anyio.wait_readable(self._read_fd)
            if not self._read_available():
                return

    def _read_available(self) -> bool:
        """Read what the pipe holds now; False once it reports end of file."""
        if self._read_fd is None:
            return False
        while True:
            try:
                data = os.read(self._read_fd, _CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self._buffer += data
            if len(self._buffer) > self._limit:
                del self._buffer[: len(self._buffer) - self._limit]


def excerpt(text: str, lines: int = EXCERPT_LINES, budget: int = EXCERPT_CHARS) -> str:
    """The end of ``text`` on one line, for a failure reason: its last non-blank lines
    (at most ``lines``, about ``budget`` characters), each cut to a sane length, with
    runs of spaces collapsed and ``|`` between lines. A line that only repeats the
    start of a neighbour (npm's bare ``npm error 404``) is left out."""
    raw = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    kept = [
        line
        for i, line in enumerate(raw)
        if not any(n != line and n.startswith(line) for n in raw[max(0, i - 1) : i + 2])
    ]
    chosen: list[str] = []
    used = 0
    for line in reversed(kept):
        cut = line if len(line) <= EXCERPT_LINE_CHARS else line[: EXCERPT_LINE_CHARS - 1] + "…"
        if len(chosen) == lines or (chosen and used + len(cut) > budget):
            break
        chosen.append(cut)
        used += len(cut) + 3
    return " | ".join(reversed(chosen))
