"""Keep the last few KiB a server subprocess writes to stderr, for the failure log.

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
