"""A command run through its ``main`` in the test's process, its output and exit code
as a process's would be: most of a process's second goes to importing before it begins,
so a test that runs a command many times runs it here (and once as a process)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest


def run_main(
    main: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    capsys.readouterr()  # what came before is not this command's
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's refusals
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out, err)
