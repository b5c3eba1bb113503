"""After start-up the daemon moves its heap out of the collector's reach, so a full
collection later (triggered by a large PDF in a worker thread) scans only what turns
made: it no longer stops the event loop for the length of a whole-heap scan."""

from __future__ import annotations

import gc

from structlog.testing import capture_logs

from thalos_bot.service.heap import settle_heap


def test_settling_the_heap_freezes_what_start_up_built() -> None:
    kept = [object() for _ in range(1000)]  # alive: frozen, never collected again
    try:
        with capture_logs() as logs:
            frozen = settle_heap()
        assert frozen >= len(kept)
        assert gc.get_freeze_count() >= len(kept), "still frozen"
        assert logs == [{"event": "heap_settled", "log_level": "debug", "frozen": frozen}]
    finally:
        gc.unfreeze()
