"""Real ``thalos-bot run`` replicas for the cluster tests: each its own process, its own
state folder, the same ``bot.toml`` apart from its listener's port, sharing one
PostgreSQL store, taking Telegram's updates by webhook. Their JSON log is copied to a
file as it comes, and a replica counts as started once it logs ``ready``."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from tests.channels.cli_process import clean_env, command
from tests.cluster import invariants
from tests.cluster.conftest import WEBHOOK_SECRET
from tests.cluster.processes import Haproxy, Replica, start_haproxy, start_together
from tests.cluster.replicas import WEBHOOK_URL
from tests.daemon_config import SCRIPTED
from tests.fakes.telegram_api import TelegramFake
from tests.ports import free_port
from thalos_bot_telegram import SECRET_ENV, TOKEN_ENV

ALLOWED = (4242, 4343, 4444)
STARTED = 60.0
"""Seconds a replica may take to log ``ready`` (under CPU contention)."""


def daemon_config(
    telegram_url: str,
    pg_url: str,
    port: int,
    *,
    lease: float,
    provider: str = SCRIPTED,
    sections: str = "",
) -> str:
    """The replica's ``bot.toml``; ``sections``: more tables, at the end."""
    users = ", ".join(str(u) for u in ALLOWED)
    return f"""
state_dir = "state"
[provider]
{provider}
[pump]
flush_interval = "0.1s"
shutdown_grace = "10s"
[logging]
format = "json"
[storage]
url = "{pg_url}"
[channels.console]
enabled = false
[channels.telegram]
enabled = true
base_url = "{telegram_url}"
allowed_user_ids = [{users}]
streaming = "edit"
chat_min_interval = "0.05s"
request_timeout = 5
mode = "webhook"
webhook_url = "{WEBHOOK_URL}"
webhook_listen = "127.0.0.1:{port}"
lease_seconds = "{lease}s"
{sections}"""


def _copy(stream: subprocess.Popen[bytes], sink: Path, ready: threading.Event) -> None:
    assert stream.stderr is not None
    with stream.stderr, sink.open("ab") as out:
        for line in stream.stderr:
            out.write(line)
            out.flush()
            if b'"event": "ready"' in line:
                ready.set()
    ready.set()  # the process ended: whoever waits looks at it


async def start_daemon(
    tmp: Path,
    telegram_url: str,
    pg_url: str,
    *,
    lease: float,
    env: dict[str, str],
    index: int,
    provider: str = SCRIPTED,
    sections: str = "",
    web: bool = False,
    web_keys: str = "",
    ports: tuple[int, int | None] | None = None,
) -> Replica:
    """``thalos-bot run`` in ``tmp/replica-<index>``; returns once it logged ``ready``.
    With ``web``, the web channel listens too, on a port of its own (``web_port``), with
    ``web_keys`` (more keys of its section).
    ``ports``: the webhook's and the web listener's (a replica started again keeps its
    place behind the balancers); free ones by default."""
    home = tmp / f"replica-{index}"
    home.mkdir(exist_ok=True)
    port, web_port = ports or (free_port(), free_port() if web else None)
    if web_port is not None:
        sections += web_section(web_port) + web_keys
    (home / "bot.toml").write_text(
        daemon_config(
            telegram_url, pg_url, port, lease=lease, provider=provider, sections=sections
        ),
        encoding="utf-8",
    )
    log = tmp / f"replica-{index}-{len(list(tmp.glob(f'replica-{index}-*.log')))}.log"
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=home,
        env=clean_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    ready = threading.Event()
    threading.Thread(target=_copy, args=(process, log, ready), daemon=True).start()
    replica = Replica(process, port, log, web_port=web_port, home=home)
    try:
        await anyio.to_thread.run_sync(ready.wait, STARTED)
    except BaseException:  # cancelled while it starts: it is nobody's to close later
        replica.close()
        raise
    if process.poll() is not None or not replica.logged("ready"):
        replica.close()
        raise AssertionError(f"replica {index} did not start: {log.read_text()[-3000:]}")
    return replica


def web_section(port: int) -> str:
    """The web channel with the OpenAI-compatible API; hooks are served there too."""
    return f'[channels.web]\nenabled = true\nlisten = "127.0.0.1:{port}"\napi = true\n'


@dataclass
class Daemons:
    fake: TelegramFake
    url: str
    replicas: list[Replica]
    haproxy: Haproxy
    web: Haproxy | None = None
    """HAProxy in front of the replicas' web listeners (``web=True``)."""
    restart: Callable[[Replica], Awaitable[Replica]] | None = None

    async def replace(self, old: Replica) -> Replica:
        """``old`` (stopped) started again in its folder, on its ports."""
        assert self.restart is not None
        fresh = await self.restart(old)
        self.replicas[self.replicas.index(old)] = fresh
        return fresh

    async def holder(self, chat: int) -> Replica:
        pid = await anyio.to_thread.run_sync(invariants.holder_pid, self.url, chat)
        found = [r for r in self.replicas if r.pid == pid]
        assert found, f"no replica holds chat {chat} (pid {pid})"
        return found[0]

    async def say_and_wait(self, chat: int, text: str, timeout: float = 60) -> None:
        self.fake.push_text(chat, chat, text)
        await self.fake.wait_for(lambda: invariants.shown_once(self.fake, chat, text), timeout)


@asynccontextmanager
async def running_daemons(
    fake: TelegramFake,
    pg_url: str,
    tmp: Path,
    *,
    lease: float,
    provider: str = SCRIPTED,
    env: dict[str, str] | None = None,
    sections: str = "",
    web: bool = False,
    web_keys: str = "",
) -> AsyncIterator[Daemons]:
    """Three daemons behind HAProxy, the fake delivering its webhooks there; with
    ``web``, their web listeners behind a second HAProxy (:attr:`Daemons.web`)."""
    env = {TOKEN_ENV: fake.token, SECRET_ENV: WEBHOOK_SECRET, **(env or {})}
    replicas: list[Replica] = []
    haproxy: Haproxy | None = None
    front: Haproxy | None = None

    async def started(index: int, ports: tuple[int, int | None] | None = None) -> Replica:
        return await start_daemon(
            tmp,
            fake.base_url,
            pg_url,
            lease=lease,
            env=env,
            index=index,
            provider=provider,
            sections=sections,
            web=web,
            web_keys=web_keys,
            ports=ports,
        )

    async def restart(old: Replica) -> Replica:
        return await started(replicas.index(old), (old.port, old.web_port))

    try:
        await start_together(replicas, 3, started)
        haproxy = start_haproxy(tmp, [r.port for r in replicas])
        fake.webhooks.route(haproxy.base)
        if web:
            (tmp / "web").mkdir(exist_ok=True)
            ports = [r.web_port for r in replicas if r.web_port is not None]
            front = start_haproxy(tmp / "web", ports, idempotent=False)
        yield Daemons(fake, pg_url, replicas, haproxy, front, restart)
    finally:
        for replica in replicas:
            replica.close()
        for proxy in (haproxy, front):
            if proxy is not None:
                proxy.stop()
