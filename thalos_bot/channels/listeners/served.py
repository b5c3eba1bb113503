"""What the host serves on a transport's HTTP listener beside the transport's own pages.

A transport with a listener (the web channel) serves the daemon's own HTTP sides too:
the OpenAI-compatible API, the webhooks and the dashboard. They are the core's, not the
transport's: the host builds each and hands it over as one of these, and the transport
only mounts it. The API and the webhooks sit outside the transport's login (each checks
its own credential: a key, a hook's signature); the dashboard sits behind it, and is
told who is logged in through a :class:`PageLogin`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from thalos_bot.channels.final import ConfirmingAdapter, ConfirmingClips, ConfirmingNotices
from thalos_bot.channels.ports import ChannelAdapter, Delivery, InboundMessage
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import AsksApproval


@dataclass(frozen=True, slots=True)
class Served:
    """An app served outside the transport's login, on the paths it ``serves``; its
    bodies are already capped (:class:`~thalos_bot.channels.listeners.body.BodyCap`)."""

    app: ASGIApp
    serves: Callable[[str], bool]


class Serving(
    ChannelAdapter, ConfirmingAdapter, ConfirmingNotices, ConfirmingClips, AsksApproval, Protocol
):
    """The adapter of a transport that serves the API: every confirming port, and
    approvals."""

    @property
    def flush_interval(self) -> float | None: ...


class ServedApi(Protocol):
    """The OpenAI-compatible API as a transport serves it: its app, and the deliveries
    of the conversations it started (a request waits for them)."""

    @property
    def served(self) -> Served: ...

    def owns(self, conversation: ConversationId) -> bool:
        """Whether ``conversation`` is one of the API's (its deliveries go to it)."""
        ...

    def deliver(self, conversation: ConversationId, event: Delivery) -> None: ...

    def first(self, adapter: Serving) -> ChannelAdapter:
        """``adapter`` with the API's conversations routed to the API first (their
        deliveries, rows and questions): what the transport hands the daemon."""
        ...

    def close(self) -> None:
        """The transport is closing: requests still waiting, and any that come now, are
        told to come back (no answer will reach them here)."""
        ...


ApiMaker = Callable[[ChannelId, Callable[[InboundMessage], None], int, int], ServedApi]
"""The API for a transport: given its channel, where its messages go, the requests a
key may make a minute, and the most a request's body may weigh."""


@dataclass(frozen=True, slots=True)
class PageLogin:
    """Who is logged in on a transport's pages, for the dashboard behind that login."""

    principal_of: Callable[[Request], str | None]
    is_owner: Callable[[str], bool]
    """Sees everyone's sessions, spend, schedules and the audit, and may change things."""
    csrf_token: Callable[[Request], str]
    check_csrf: Callable[[Request], Awaitable[bool]]
    csrf_field: str
    person_of: Callable[[str], str]


DashboardMaker = Callable[[PageLogin], ASGIApp]
"""The dashboard's pages (mounted under ``/dashboard``) behind a transport's login."""


def beside(outside: Served, inside: ASGIApp) -> ASGIApp:
    """A request to a path ``outside`` serves goes there; any other to ``inside``."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and outside.serves(scope["path"]):
            await outside.app(scope, receive, send)
            return
        await inside(scope, receive, send)

    return app
