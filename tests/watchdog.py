"""A watchdog past pytest-timeout: a worker whose test is still running well past its
timeout is ended, so the run goes on without it (xdist reports the test as failed, its
worker crashed, and starts another).

pytest-timeout's signal method fails a test once, in its body, and leaves the tasks the
body started behind; when the test's async fixtures then wait on those in their
teardown, nothing fires again, and the whole run waited for CI's own limit. Here the
stack of every thread goes to the worker's stderr first, and the test's name to the
run's report.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from collections.abc import Iterator

import pytest

GRACE_ENV = "THALOS_TEST_WATCHDOG_GRACE"
GRACE = 60.0
"""Seconds past a test's timeout (setup, body and teardown) before its worker ends."""


def limit_of(item: pytest.Item) -> float:
    """The test's pytest-timeout (its marker's, else the configured one); 0: none."""
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    configured = item.config.getini("timeout")
    return float(configured) if configured else 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    limit = limit_of(item)
    timer: threading.Timer | None = None
    if limit > 0:
        grace = float(os.environ.get(GRACE_ENV, GRACE))

        def end() -> None:
            capture = item.config.pluginmanager.getplugin("capturemanager")
            if capture is not None:  # the test's output is being captured: not this
                capture.suspend_global_capture(in_=True)
            sys.stderr.write(
                f"\n{item.nodeid}: still running {grace:.0f} s past its {limit:.0f} s"
                " timeout; this worker ends\n"
            )
            faulthandler.dump_traceback(file=sys.stderr)
            sys.stderr.flush()
            os._exit(1)

        timer = threading.Timer(limit + grace, end)
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
