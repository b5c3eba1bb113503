"""``thalos-bot memory reindex`` shows its progress, as a process: a bar on a terminal (a
real pty), plain lines through a pipe, nothing with ``--quiet``; Ctrl-C stops it, says
what is left, and running it again continues with the pending rows.

The embedder is the endpoint one, talking to the embeddings fake over a socket. The
fake answers a request, then parks the next until the test lets it through, so each
step of the bar is seen before the next one happens: nothing waits on time.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import anyio
import pytest

from tests.fakes.embeddings_api import EmbeddingsFake
from thalos_bot.memory.records import NewMemory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database, fetch_one
from thalos_bot.storage.progress import MEMORY_REINDEX, TaskProgress, read_progress

pytestmark = pytest.mark.slow

KEY = "sk-embed-test"
COUNT = 600
"""Three batches of the reindex (256, 256, 88), one request each."""
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""Any control character but tab and newline."""


@pytest.fixture
def fake() -> Iterator[EmbeddingsFake]:
    with EmbeddingsFake(api_key=KEY) as server:
        yield server


@pytest.fixture
def config(tmp_path: Path, fake: EmbeddingsFake) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(
        'state_dir = "state"\n[memory.embeddings]\nmode = "endpoint"\n'
        f'base_url = "{fake.base_url}"\nmodel = "text-embedding-3-small"\n'
        "timeout_seconds = 120\n"
    )
    anyio.run(_seed, tmp_path / "state" / "thalos.db")
    return path


async def _seed(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        memories = (NewMemory("alice", f"Fact {n}: the {n % 9} garden gate") for n in range(COUNT))
        assert await MemoryStore(db).insert_many(memories) == COUNT


def database(config: Path) -> Path:
    return config.parent / "state" / "thalos.db"


async def _state(path: Path) -> tuple[int, list[TaskProgress]]:
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        async with db.read() as conn:
            row = await fetch_one(conn, "SELECT count(*) FROM memory_index_pending")
        assert row is not None
        return int(row[0]), await read_progress(db, MEMORY_REINDEX)


def state(config: Path) -> tuple[int, list[TaskProgress]]:
    """Pending rows, and the reindex's progress row, as ``thalos-bot status`` reads it."""
    result: tuple[int, list[TaskProgress]] = anyio.run(_state, database(config))
    return result


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THALOS_")}
    env["THALOS_EMBEDDINGS_API_KEY"] = KEY
    return env


def command(config: Path, *args: str) -> list[str]:
    """``thalos-bot memory reindex ARGS -c CONFIG``."""
    return [
        *(sys.executable, "-m", "thalos_bot.cli.main", "memory", "reindex"),
        *(*args, "-c", str(config)),
    ]


def reindex(config: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(config, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )


def line(stream: IO[str] | None) -> str:
    assert stream is not None
    return stream.readline()


def embedded_texts(fake: EmbeddingsFake, since: int = 0) -> int:
    return sum(len(body["input"]) for body in fake.requests[since:])


def test_piped_output_is_plain_lines_at_each_tenth(config: Path, fake: EmbeddingsFake) -> None:
    fake.hold_after(1)
    process = reindex(config)
    try:
        first = line(process.stderr)
        assert first == "memory reindex: 256/600 (43%), " + first.split(", ", 1)[1]
        assert first.rstrip().endswith("left")
        fake.release()
        assert line(process.stderr).startswith("memory reindex: 512/600 (85%), ")
        fake.release()
        last = line(process.stderr)
        assert last.startswith("memory reindex: 600/600 (100%), ")
        assert ", done in " in last
        out, rest = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, rest
    assert out == f"embedded {COUNT} memories with endpoint/text-embedding-3-small; 0 pending\n"
    assert rest == ""
    for text in (first, last, out):
        assert not CONTROL.search(text), repr(text)


def test_quiet_shows_no_progress(config: Path) -> None:
    process = reindex(config, "--quiet")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert err == ""
    assert out.startswith(f"embedded {COUNT} memories")


def _set_size(fd: int, rows: int = 24, columns: int = 100) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


class Terminal:
    """The parent's side of a pty: everything the child drew, read as it comes."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.seen = ""

    def read_until(self, text: str) -> str:
        """Read until ``text`` has been drawn; what was drawn since the last call."""
        start = len(self.seen)
        while text not in self.seen[start:]:
            ready, _, _ = select.select([self.fd], [], [], 60)
            assert ready, f"the terminal never showed {text!r}: {self.seen[start:]!r}"
            if not self._read():
                break
        assert text in self.seen[start:], f"{text!r} not in {self.seen[start:]!r}"
        return self.seen[start:]

    def read_to_end(self) -> str:
        start = len(self.seen)
        while select.select([self.fd], [], [], 60)[0] and self._read():
            pass
        return self.seen[start:]

    def _read(self) -> bool:
        try:
            chunk = os.read(self.fd, 65536)
        except OSError as exc:  # the child closed its side
            if exc.errno == errno.EIO:
                return False
            raise
        self.seen += chunk.decode(errors="replace")
        return bool(chunk)


def test_a_terminal_sees_the_bar_move(config: Path, fake: EmbeddingsFake) -> None:
    fake.hold_after(1)
    parent, child = pty.openpty()
    _set_size(child)
    env = environment() | {"TERM": "xterm-256color", "COLUMNS": "100", "LINES": "24"}
    env["PYTHONIOENCODING"] = "utf-8"  # the bar's characters, whatever the locale
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        command(config),
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        close_fds=True,
    )
    os.close(child)
    terminal = Terminal(parent)
    try:
        drawn = terminal.read_until("256/600")
        assert "\x1b[" in drawn, "drawn with terminal control sequences"
        assert "memory reindex: 256/600 (" not in drawn, "a bar, not a plain line"
        assert "━" in drawn, "with a bar"
        assert re.search(r"\d[\d,.]*/s", drawn), f"with a rate: {drawn!r}"
        fake.release()
        terminal.read_until("512/600")
        fake.release()
        terminal.read_until("600/600")
        rest = terminal.read_to_end()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait()
        os.close(parent)
    assert "embedded 600 memories" in terminal.seen, rest


def test_ctrl_c_stops_and_the_next_run_continues_with_the_pending_rows(
    config: Path, fake: EmbeddingsFake
) -> None:
    fake.hold_after(1)
    process = reindex(config)
    try:
        assert line(process.stderr).startswith("memory reindex: 256/600 (43%)")
        fake.wait_for(lambda: fake.parked == 1)  # the second batch is in flight
        pending, (row,) = state(config)
        assert (row.state, row.done, row.total, row.detail) == ("running", 256, 600, "full")
        assert row.pid == process.pid
        assert pending == COUNT - 256
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130, err
    assert out == ""
    assert err == (
        "stopped: 256 of 600 memories done; 344 still pending. Run `thalos-bot memory"
        " reindex` again to continue with them (recall finds them by keywords meanwhile)\n"
    )
    pending, (row,) = state(config)
    assert pending == 344
    assert (row.state, row.done, row.total) == ("interrupted", 256, 600)

    fake.open_gate()
    before = len(fake.requests)
    again = reindex(config)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert out.splitlines() == [
        "continuing the interrupted reindex: 344 memories still pending (--restart to start over)",
        "embedded 344 memories with endpoint/text-embedding-3-small; 0 pending",
    ]
    assert embedded_texts(fake, before) == 344, "only the pending rows were embedded again"
    pending, (row,) = state(config)
    assert pending == 0
    assert (row.state, row.done, row.total, row.detail) == ("done", 344, 344, "full")

    restart = reindex(config, "--restart", "--quiet")
    out, err = restart.communicate(timeout=60)
    assert restart.returncode == 0, err
    assert out == f"embedded {COUNT} memories with endpoint/text-embedding-3-small; 0 pending\n"
