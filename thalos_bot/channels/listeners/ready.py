"""``/readyz``: a balancer's readiness probe on a transport's listener.

A listener that runs behind a balancer (the web page, Telegram's webhook) answers it
``200 ready`` while its daemon takes requests, and ``503 draining`` from the moment the
daemon begins to stop, so the balancer sends nothing more there before the listener
closes (``deploy/haproxy.cfg`` checks it). It is served beside the listener's app,
outside its login and its rate limit: a flood through the balancer must never make the
probe fail.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from thalos_bot.channels.listeners.served import Served

PATH = "/readyz"


def readiness(ready: Callable[[], bool]) -> Served:
    """The probe, to serve :func:`~thalos_bot.channels.listeners.served.beside` the
    listener's app; ``ready`` says whether the daemon takes requests now."""

    async def probe(scope: Scope, receive: Receive, send: Send) -> None:
        taking = ready()
        text, status = ("ready\n", 200) if taking else ("draining\n", 503)
        await PlainTextResponse(text, status_code=status)(scope, receive, send)

    return Served(probe, PATH.__eq__)
