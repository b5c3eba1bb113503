"""A fake server's own event loop, on a thread of its own: started by ``with``, stopped
(its ``_opened`` torn down by ``_closing``, then every task it still runs ended) when the
block ends. A fake subclasses :class:`LoopThread`; tests call :meth:`run` from theirs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Self, TypeVar

T = TypeVar("T")


class LoopThread:
    name = "fake"
    """The thread's name, and what the error says when it does not start."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    async def _opened(self) -> None:
        """Start serving, on the fake's loop."""

    async def _closing(self) -> None:
        """Stop serving, on the fake's loop (the block is ending)."""

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError(f"the {self.name} did not start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        loop = self._loop
        if loop is not None:
            asyncio.run_coroutine_threadsafe(self._closing(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.run_until_complete(self._opened())
        self._started.set()
        loop.run_forever()
        loop.run_until_complete(_cancel_the_rest())
        loop.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the fake's loop and wait for it (from any thread)."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)


async def _cancel_the_rest() -> None:
    """End what still runs on the fake's loop (its connections' handlers)."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
