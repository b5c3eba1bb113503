"""Media work off the event loop, a few files at a time.

Decoding an image, counting a PDF's pages and checking a text file's bytes take from a
few milliseconds to seconds, and an image being decoded can hold hundreds of megabytes.
Done on the event loop, that stalls every chat; done in as many threads as files arrive
(an album of ten, several chats at once), it takes all the memory. So every such job
runs in a worker thread and takes a token of one limiter, shared by the whole process
(:func:`media_limiter`): at most :data:`MEDIA_WORKERS` run at once, and the rest wait
their turn without holding a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, TypeVarTuple, Unpack

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar

MEDIA_WORKERS = 2
"""Media jobs that may run at once in the process (images, PDFs, text files)."""

_LIMITER: RunVar[CapacityLimiter] = RunVar("thalos_media_limiter")

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def media_limiter() -> CapacityLimiter:
    """The one limiter of the running event loop (a fresh one per ``anyio.run``, since a
    limiter belongs to the loop it was made in)."""
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = CapacityLimiter(MEDIA_WORKERS)
        _LIMITER.set(limiter)
        return limiter


async def off_loop(func: Callable[[Unpack[Ts]], T], *args: *Ts) -> T:
    """``func(*args)`` in a worker thread, once a token of :func:`media_limiter` is free."""
    return await anyio.to_thread.run_sync(func, *args, limiter=media_limiter())
