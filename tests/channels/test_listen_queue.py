"""The kernel keeps a long queue of connections the listener has not accepted yet:
asyncio listens with its accept batch (a quarter of the connection cap), and
:func:`serving` lengthens the queue again, so that a burst of connections never
leaves a new client waiting out a resent SYN."""

from __future__ import annotations

import socket
from contextlib import ExitStack

import pytest
from starlette.responses import PlainTextResponse

from thalos_bot.channels.listeners.bounded import budget
from thalos_bot.channels.listeners.server import bind, serving

pytestmark = pytest.mark.anyio

BURST = 64


async def test_a_burst_past_the_accept_batch_waits_in_the_kernel_queue() -> None:
    _, batch = budget(16)
    assert 2 * batch < BURST
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    async with serving(PlainTextResponse("ok"), sock, header_timeout=10, max_connections=16):
        # Connecting here blocks the loop: nothing is accepted while the burst arrives,
        # so each connection is held by the kernel's queue or its SYN goes unanswered
        # (resent only after a second: the timeout here is under it).
        with ExitStack() as held:
            for _ in range(BURST):
                held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=0.9))
