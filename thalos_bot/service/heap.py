"""The heap after start-up: what was built to start lives as long as the process.

A full garbage collection scans every tracked object, and under CPython it stops every
thread while it runs, the event loop's too. After start-up the heap holds a few hundred
thousand objects (modules, settings, clients, the tokenizer, the MCP sessions), so each
full collection, triggered by whatever allocates a lot (pypdf reading a PDF of many
pages in a worker thread), stalled every chat for 50-300 ms. :func:`settle_heap` frees
the start-up garbage once and moves the rest out of the collector's reach
(:func:`gc.freeze`): later collections scan only what turns make.
"""

from __future__ import annotations

import gc

import structlog

log = structlog.get_logger(__name__)


def settle_heap() -> int:
    """Collect once, then freeze what is left; returns how many objects were frozen.
    Called once, when the daemon has started (before it reads a message)."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("heap_settled", frozen=frozen)
    return frozen
