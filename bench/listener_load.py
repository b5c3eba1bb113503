"""A bounded local load test of a listener's bounds, printing its figures. The web
listener (``--listener web``) runs in a real ``thalos-bot run`` (scripted provider,
loopback, a state folder of its own); Telegram's webhook listener (``--listener
telegram``) runs alone (``bench/webhook_listener.py``: the real listener, its store in
memory), and its flood is of secret-bearing deliveries. For each:

1. a flood of requests from one address (``--clients`` at once for ``--seconds``):
   requests a second served (200) and refused by the rate limit (429);
2. idle connections, ``--idle`` of them, none sending its headers: how many the
   listener still holds (at most its connection cap), and whether a request sent
   then is still answered;
3. the daemon's resident memory before and after.

    .venv/bin/python bench/listener_load.py [--listener web|telegram] [--clients 8]
        [--seconds 5] [--idle 300]

Bounded: at most ``--seconds`` of flood, ``--idle`` sockets (under the descriptor
limit), a minute's wait at most for the daemon; loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[1]
Delivery = tuple[dict[str, str], Callable[[int], dict[str, object]]]
"""Telegram's flood: the secret's header, and the update numbered ``n``."""

CONFIG = """
state_dir = "state"
[provider]
kind = "scripted"
[channels.console]
enabled = false
[channels.web]
enabled = true
listen = "127.0.0.1:{port}"
principals = ["owner"]
header_timeout = "{header_timeout}s"
max_connections = {max_connections}
rate_limit = {rate_limit}
rate_burst = {rate_burst}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"listener_load: the daemon exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    sys.exit("listener_load: the daemon did not listen within 60 s")


async def flood(
    url: str, clients: int, seconds: float, telegram: Delivery | None
) -> dict[str, int]:
    counts: dict[str, int] = {}
    end = time.monotonic() + seconds
    sent = 0
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:

        async def request() -> httpx.Response:
            nonlocal sent
            if telegram is None:
                return await client.get("/login")
            sent += 1
            headers, update = telegram
            return await client.post("/telegram", json=update(sent), headers=headers)

        async def one() -> None:
            while time.monotonic() < end:
                try:
                    code = str((await request()).status_code)
                except httpx.HTTPError as exc:
                    code = type(exc).__name__
                counts[code] = counts.get(code, 0) + 1

        async with anyio.create_task_group() as group:
            for _ in range(clients):
                group.start_soon(one)
    return counts


def held(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server has not closed (a read would block)."""
    alive = 0
    for sock in sockets:
        sock.setblocking(False)  # noqa: FBT003 - the socket API's own flag
        try:
            alive += sock.recv(1) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


def idle_connections(port: int, count: int) -> list[socket.socket]:
    opened: list[socket.socket] = []
    for _ in range(count):
        try:
            opened.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            break
    return opened


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listener", choices=["web", "telegram"], default="web")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--idle", type=int, default=300)
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--rate-limit", type=int, help="default: the listener's own")
    parser.add_argument("--rate-burst", type=int, help="default: the listener's own")
    parser.add_argument("--header-timeout", type=float, default=5.0)
    args = parser.parse_args()
    telegram = args.listener == "telegram"
    delivery: Delivery | None = None
    if telegram:
        from bench.webhook_listener import SECRET, update
        from thalos_bot_telegram.webhook_intake import SECRET_HEADER

        delivery = ({SECRET_HEADER: SECRET}, update)
    if args.rate_limit is None:
        args.rate_limit = 6000 if telegram else 1200
    if args.rate_burst is None:
        args.rate_burst = 1000 if telegram else 200
    script = Path(sys.executable).parent / "thalos-bot"
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="listener-load-") as folder:
        config = CONFIG.format(
            port=port,
            header_timeout=args.header_timeout,
            max_connections=args.max_connections,
            rate_limit=args.rate_limit,
            rate_burst=args.rate_burst,
        )
        (Path(folder) / "bot.toml").write_text(config, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "THALOS_BOT_CONFIG"}
        command = [str(script), "run"]
        if telegram:
            child = Path(__file__).with_name("webhook_listener.py")
            bounds = (args.header_timeout, args.max_connections, args.rate_limit, args.rate_burst)
            command = [sys.executable, str(child), str(port), *map(str, bounds)]
        process = subprocess.Popen(
            command,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_listening(port, process)
            url = f"http://127.0.0.1:{port}"
            before = rss_mb(process.pid)
            began = time.monotonic()
            counts = anyio.run(flood, url, args.clients, args.seconds, delivery)
            took = time.monotonic() - began
            sockets = idle_connections(port, args.idle)
            time.sleep(1.0)
            still = held(sockets)
            try:
                probe = "/readyz" if telegram else "/login"
                during = httpx.get(f"{url}{probe}", timeout=10).status_code
            except httpx.HTTPError as exc:
                during = type(exc).__name__  # type: ignore[assignment]
            for sock in sockets:
                sock.close()
            after = rss_mb(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(
        json.dumps(
            {
                "listener": args.listener,
                "flood_seconds": round(took, 2),
                "served_per_s": round(counts.get("200", 0) / took, 1),
                "refused_429_per_s": round(counts.get("429", 0) / took, 1),
                "statuses": counts,
                "idle_opened": len(sockets),
                "idle_held": still,
                "connection_cap": args.max_connections,
                "rate_limit_per_min": args.rate_limit,
                "rate_burst": args.rate_burst,
                "request_during_idle_flood": during,
                "rss_mb_before": round(before, 1),
                "rss_mb_after": round(after, 1),
            }
        )
    )


if __name__ == "__main__":
    sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library
    main()
