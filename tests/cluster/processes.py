"""Real processes for the replica tests: HAProxy from Debian's package, and replicas
(:mod:`tests.cluster.replica_main`) that a test may kill, stop and continue."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CFG = """\
global
    maxconn 512
defaults
    mode http
    timeout connect 500ms
    timeout client 30s
    timeout server 3s
    timeout check 500ms
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout 503
frontend telegram
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server check inter 200ms fall 1 rise 1
{servers}
"""
RETRY_ON = "retry-on conn-failure empty-response response-timeout 503"


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("haproxy is not installed under CI (.ci/run installs it)")
        pytest.skip("haproxy is not installed")
    return found


@dataclass
class Haproxy:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def start_haproxy(tmp: Path, backends: list[int], *, idempotent: bool = True) -> Haproxy:
    """HAProxy in front of ``backends``, each checked on ``/readyz``. Not ``idempotent``
    (the web listener: a chat request, a message sent from the page), a request is
    retried only when it could not connect: never a POST a replica may have started on,
    as deploy/haproxy.cfg does."""
    binary = haproxy_binary()
    port = free_port()
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p}" for i, p in enumerate(backends, 1))
    cfg = tmp / "haproxy.cfg"
    text = HAPROXY_CFG.format(port=port, servers=servers)
    if not idempotent:
        text = text.replace(RETRY_ON, "retry-on conn-failure")
        # A page's event stream stays open (deploy/haproxy.cfg gives it 10 minutes).
        text = text.replace("timeout server 3s", "timeout server 60s")
    cfg.write_text(text, encoding="utf-8")
    checked = subprocess.run([binary, "-c", "-f", str(cfg)], capture_output=True, check=False)
    assert checked.returncode == 0, checked.stderr.decode()
    process = subprocess.Popen([binary, "-db", "-f", str(cfg)], stderr=subprocess.DEVNULL)
    return Haproxy(process, port)


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    stopped: bool = field(default=False)
    web_port: int | None = None
    """The web channel's listener, when it has one."""
    home: Path | None = None
    """Its folder (``bot.toml``), when it is a ``thalos-bot run``."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)
        self.stopped = True

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)
        self.stopped = False

    async def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            code = await anyio.to_thread.run_sync(lambda: self.process.wait(timeout=60))
        except subprocess.TimeoutExpired:
            tail = self.log.read_text(encoding="utf-8", errors="replace")[-4000:]
            said = f"still running 60 s after SIGTERM; its log ends:\n{tail}"
            raise AssertionError(said) from None
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code

    def logged(self, event: str) -> bool:
        return f'"event": "{event}"' in self.log.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        if self.stopped:
            self.resume()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


async def start_together(
    replicas: list[Replica], count: int, start: Callable[[int], Awaitable[Replica]]
) -> None:
    """``start(0)`` … ``start(count - 1)`` at once, as a deployment starts its replicas
    (their start-ups overlap: the imports, the migrations' advisory lock, the race for
    the leases); added to ``replicas`` in index order once all are up. The caller closes
    what is in ``replicas``: if one fails, those that did start are added all the same."""
    slots: list[Replica | None] = [None] * count

    async def one(index: int) -> None:
        slots[index] = await start(index)

    try:
        async with anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(one, index)
    finally:
        replicas.extend(r for r in slots if r is not None)


async def start_replica(
    tmp: Path,
    fake_url: str,
    pg_url: str,
    *,
    lease: float,
    delay: float,
    env: dict[str, str],
    port: int | None = None,
) -> Replica:
    port = port or free_port()
    log = tmp / f"replica-{port}-{len(list(tmp.glob('replica-*.log')))}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.cluster.replica_main",
                fake_url,
                pg_url,
                str(port),
                str(lease),
                str(delay),
            ],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=sink,
        )
    replica = Replica(process, port, log)
    assert process.stdout is not None
    try:
        line = await anyio.to_thread.run_sync(process.stdout.readline)
    except BaseException:  # cancelled while it starts: it is nobody's to close later
        replica.close()
        raise
    if line.strip() != b"ready":
        replica.close()
        raise AssertionError(f"replica did not start: {log.read_text()[-3000:]}")
    return replica
