"""uvicorn, run as a part of the daemon rather than as its own program, with the
listener's bounds (:mod:`.bounded`): every HTTP listener the daemon opens is served here.

uvicorn's ``serve`` would install its own signal handlers and poll a flag every 100 ms;
here the socket is bound first (so a busy port is a clear start-up error, and port 0
gives a free one to tests), the server is started on it, and it runs until the task
that holds it is cancelled; then it closes its connections, for at most
:data:`GRACE` seconds.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator

import anyio
import uvicorn
from starlette.types import ASGIApp

from thalos_bot.channels.listeners.bounded import bounded_protocol, budget, quiet_floods
from thalos_bot.channels.ports import ChannelFatalError

GRACE = 2.0
LISTEN_QUEUE = 2048
"""Connections the kernel holds until they are accepted: none of them costs the daemon
a descriptor, and a full queue drops a new client's SYN (which it resends only after a
second, then three, then seven), so the queue is long (:func:`serving` restores it
after asyncio shortened it to the accept batch)."""
EXIT_LISTEN = 78
"""EX_CONFIG: the address is taken or not this machine's; restarting will not help."""


class ListenError(ChannelFatalError):
    """The daemon cannot serve a listener: it stops, saying why (no traceback)."""

    def __init__(self, listen: str, reason: str, section: str, key: str) -> None:
        super().__init__(
            f"{section}: cannot listen on {listen}: {reason} (another program, or "
            f"another thalos-bot, may be using it; change {key} in [{section}])",
            EXIT_LISTEN,
        )


def bind(host: str, port: int, section: str = "channels.web", key: str = "listen") -> socket.socket:
    """A listening socket on ``host:port``; a :class:`ListenError` naming ``key`` of
    ``[section]`` when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or type(exc).__name__
        raise ListenError(f"{host}:{port}", reason, section, key) from None
    sock.listen(LISTEN_QUEUE)
    sock.setblocking(False)  # noqa: FBT003 - the socket API's own flag
    return sock


@contextlib.asynccontextmanager
async def serving(
    app: ASGIApp,
    sock: socket.socket,
    *,
    header_timeout: float,
    max_connections: int,
    forwarded_allow_ips: list[str] | None = None,
    name: str = "web",
) -> AsyncIterator[uvicorn.Server]:
    """Serve ``app`` on ``sock`` with the listener's bounds (:mod:`.bounded`); what it
    sheds is logged as ``<name>_connections_shed``."""
    quiet_floods()
    cap, backlog = budget(max_connections)
    config = uvicorn.Config(
        app,
        http=bounded_protocol(header_timeout, cap, name),
        backlog=backlog,
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=int(GRACE),
        proxy_headers=True,
        forwarded_allow_ips=forwarded_allow_ips or None,
        ws="none",
    )
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    sock.listen(LISTEN_QUEUE)  # asyncio listened with the backlog, its accept batch
    try:
        yield server
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(GRACE + 1):
            await server.shutdown()
        sock.close()
