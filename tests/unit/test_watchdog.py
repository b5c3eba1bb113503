"""The suite's watchdog (tests/watchdog.py): a test that pytest-timeout failed in its
body and whose teardown then hangs ends its process instead of holding the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.watchdog import GRACE_ENV

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def test_a_teardown_hanging_after_the_timeout_ends_the_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        """
        import time
        import pytest

        @pytest.fixture
        def stuck():
            yield
            time.sleep(600)  # a teardown that never ends (the timeout fired already)

        def test_stuck(stuck):
            time.sleep(600)
        """
    )
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv(GRACE_ENV, "1")
    ran = pytester.runpytest_subprocess(
        "-p", "tests.watchdog", "-o", "timeout=1", "-o", "timeout_method=signal", timeout=60
    )
    assert ran.ret != 0
    ran.stderr.fnmatch_lines(["*test_stuck: still running 1 s past its 1 s timeout*"])
