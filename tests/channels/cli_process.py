"""Run the real ``thalos-bot`` command as a subprocess, piped or under a pseudo-terminal."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ANSI_FREE_ENV = {"NO_COLOR": "1"}


INSTALLED_ENV = "THALOS_BOT_UNDER_TEST"
"""Set by .ci/run to the ``thalos-bot`` of a clean wheel install, so the process tests
drive what a user installs rather than the development checkout."""


def command() -> list[str]:
    installed = os.environ.get(INSTALLED_ENV)
    if installed:
        return [installed]
    script = Path(sys.executable).parent / "thalos-bot"
    return [str(script)] if script.exists() else [sys.executable, "-m", "thalos_bot"]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN", "THALOS_BOT_CONFIG", INSTALLED_ENV}
    }
    env.update(extra or {})
    return env


def run_piped(
    args: list[str],
    stdin: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=clean_env(env),
        timeout=timeout,
        check=False,
    )


class PtySession:
    """A child process whose stdin/stdout/stderr are a pseudo-terminal it controls."""

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        env: Mapping[str, str] | None = None,
        size: tuple[int, int] | None = None,
    ) -> None:
        """``size``: (rows, columns) of the terminal, when the test reads it as a screen."""
        import fcntl
        import pty
        import struct
        import termios

        master, slave = pty.openpty()
        if size is not None:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))

        def controlling_tty() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        full_env = clean_env({"TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", **(env or {})})
        self.process = subprocess.Popen(
            [*command(), *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=full_env,
            close_fds=True,
            preexec_fn=controlling_tty,  # noqa: PLW1509 - test-only, no threads involved
        )
        os.close(slave)
        self.master = master
        self.output = ""

    def send(self, data: str) -> None:
        os.write(self.master, data.encode())

    def send_eof(self, timeout: float = 30) -> None:
        """Ctrl-D once the prompt is live. Between two prompts the terminal is back in
        line mode, where the kernel itself takes a Ctrl-D as end-of-file for a read no
        one makes, and it never reaches the prompt. Reading the pty's settings tells the
        two apart (on Linux the master reports the terminal's own)."""
        import termios

        deadline = time.monotonic() + timeout
        while termios.tcgetattr(self.master)[3] & termios.ICANON:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the prompt never came back; output so far:\n{self.visible}")
            self._drain(0.05)
        self.send("\x04")

    def _drain(self, wait: float) -> None:
        ready, _, _ = select.select([self.master], [], [], wait)
        if ready:
            with contextlib.suppress(OSError):
                self.output += os.read(self.master, 65536).decode(errors="replace")

    def read_until(self, predicate: Callable[[str], bool], timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while not predicate(self.visible):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out; output so far:\n{self.visible}")
            ready, _, _ = select.select([self.master], [], [], min(remaining, 0.1))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    break
                self.output += chunk.decode(errors="replace")
        return self.visible

    @property
    def visible(self) -> str:
        """The output with terminal control sequences removed."""
        import re

        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.output)
        return text.replace("\r", "")

    def close(self, timeout: float = 60) -> int:
        """Wait for the process to end, reading what it still writes meanwhile: a child
        whose last lines fill the terminal's buffer would otherwise block on its write
        and never exit (seen as a 30 s timeout on a loaded machine)."""
        try:
            deadline = time.monotonic() + timeout
            while self.process.poll() is None and self.master >= 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.process.kill()
                    self.process.wait()
                    raise TimeoutError(
                        f"still running after {timeout:.0f} s; output so far:\n{self.visible}"
                    )
                self._drain(min(remaining, 0.1))
            return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        finally:
            if self.master >= 0:
                os.close(self.master)
                self.master = -1


def start_chat(
    cwd: Path, env: Mapping[str, str] | None = None, size: tuple[int, int] | None = None
) -> PtySession:
    """``thalos-bot chat`` under a pty, returned once its first prompt shows (killed if it
    never does). Start-up (imports, database, MCP) is slow on a busy machine; answers are
    not, so only this wait is long."""
    session = PtySession(["chat"], cwd=cwd, env=env, size=size)
    try:
        session.read_until(lambda out: "Ctrl-D quits" in out and "›" in out, timeout=60)
    except BaseException:
        session.process.kill()
        session.close()
        raise
    return session


def screen_lines(raw: str, size: tuple[int, int]) -> list[str]:
    """What a terminal of ``size`` shows after ``raw``: its scrollback, then the screen
    (trailing blanks trimmed), as a real terminal emulator (pyte) draws it."""
    import pyte

    rows, columns = size
    screen = pyte.HistoryScreen(columns, rows, history=10_000)
    stream = pyte.Stream(screen)
    stream.feed(raw)

    def text(line: dict[int, pyte.screens.Char]) -> str:
        return "".join(line[x].data for x in range(columns)).rstrip()

    above = [text(line) for line in screen.history.top]
    return [*above, *(line.rstrip() for line in screen.display)]
