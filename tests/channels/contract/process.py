"""The real daemon as a process, for the one case an in-process daemon cannot show: a
``kill -9``. It runs ``thalos-bot run`` on a ``bot.toml`` made from the transport's own
contract config (the scripted echo model, the SQLite state folder), with the
transport's tokens in the environment, against the same fake or server."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import tomlkit

from tests.channels.cli_process import clean_env, command
from tests.channels.contract.transport import ContractTransport

SCRIPTED = {"state_dir": "state", "provider": {"kind": "scripted"}}


def write_config(transport: ContractTransport, folder: Path) -> Path:
    """``folder/bot.toml``: the transport's contract config as its ``[channels.<name>]``
    table (every value it sets, as the loader reads it back)."""
    section = transport.config().model_dump(mode="json", exclude_unset=True)
    document = {**SCRIPTED, "channels": {transport.plugin.name: section}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bot.toml"
    path.write_text(tomlkit.dumps(document), encoding="utf-8")
    return path


@asynccontextmanager
async def daemon(transport: ContractTransport, folder: Path) -> AsyncIterator[Daemon]:
    """``thalos-bot run`` in ``folder``; on exit it is stopped (SIGTERM) unless the body
    killed it. Its log is kept in ``folder/daemon-<n>.log`` for a failing test."""
    runs = len(list(folder.glob("daemon-*.log")))
    log = (folder / f"daemon-{runs}.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=folder,
        env=clean_env(transport.environment()),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    running = Daemon(process, folder / f"daemon-{runs}.log")
    failed = False
    try:
        yield running
    except BaseException:
        failed = True
        raise
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            await anyio.to_thread.run_sync(lambda: process.wait(timeout=60))
        except subprocess.TimeoutExpired:
            process.kill()
            raise
        finally:
            log.close()
            if failed:  # shown with the failure (a CI run's folders do not outlive it)
                print(running.tail())


class Daemon:
    def __init__(self, process: subprocess.Popen[str], log: Path) -> None:
        self.process = process
        self.log = log

    async def kill(self) -> None:
        """SIGKILL: nothing of the daemon runs after it (no clean stop, no last write)."""
        self.process.send_signal(signal.SIGKILL)
        code = await anyio.to_thread.run_sync(lambda: self.process.wait(timeout=30))
        assert code == -signal.SIGKILL, self.log.read_text()

    def tail(self, lines: int = 120) -> str:
        kept = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
        return "\n".join([f"--- the last {len(kept)} lines of {self.log.name} ---", *kept])

    def alive(self) -> bool:
        return self.process.poll() is None
