"""A stub of the web channel as the dashboard's host: a cookie names the principal, a
per-principal token guards forms, and the dashboard is mounted under ``/dashboard``.

It is as strict as the real host must be: no cookie is no principal; a form without the
principal's token, or with another's, fails the check."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount, Router
from starlette.testclient import TestClient

from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.ports import Delivery, InboundMessage
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.routes import dashboard_routes
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database

T = TypeVar("T")
OWNER, GUEST = "owner", "guest"
COOKIE = "who"


def token_for(principal: str) -> str:
    return hashlib.sha256(f"csrf:{principal}".encode()).hexdigest()[:32]


def principal_of(request: Request) -> str | None:
    who = request.cookies.get(COOKIE)
    return who if who in {OWNER, GUEST} else None


def csrf_token(request: Request) -> str:
    principal = principal_of(request)
    return "" if principal is None else token_for(principal)


async def check_csrf(request: Request) -> bool:
    principal = principal_of(request)
    form = await request.form()
    sent = form.get("csrf_token")
    return principal is not None and isinstance(sent, str) and sent == token_for(principal)


def host_deps(**stores: Any) -> DashboardDeps:
    return DashboardDeps(
        principal_of=principal_of,
        is_owner=lambda principal: principal == OWNER,
        csrf_token=csrf_token,
        check_csrf=check_csrf,
        **stores,
    )


def client(deps: DashboardDeps, principal: str | None = OWNER) -> TestClient:
    app = Starlette(routes=[Mount("/dashboard", routes=dashboard_routes(deps))])
    test_client = TestClient(app, follow_redirects=False)
    if principal is not None:
        test_client.cookies.set(COOKIE, principal)
    return test_client


def with_deps(deps: DashboardDeps, **changes: Any) -> DashboardDeps:
    return dataclasses.replace(deps, **changes)


@dataclasses.dataclass
class Served:
    """A client of a host whose stores live on the app's own event loop."""

    client: TestClient
    database: Database

    def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` on the app's loop (where the database was opened)."""
        portal = self.client.portal
        assert portal is not None
        return portal.call(work)

    def as_(self, principal: str | None) -> Served:
        self.client.cookies.clear()
        if principal is not None:
            self.client.cookies.set(COOKIE, principal)
        return self


@contextmanager
def serving(
    path: Path,
    make_deps: Callable[[Database, AsyncExitStack], Awaitable[DashboardDeps]]
    | Callable[[Database], Awaitable[DashboardDeps]],
    principal: str | None = OWNER,
) -> Iterator[Served]:
    """Open a real SQLite database at ``path`` on the app's loop, let ``make_deps`` fill
    it and name the stores (with an exit stack for what must stay open, such as MCP
    servers, when it takes two arguments), and mount the dashboard over them."""
    mounted = Router()
    opened: list[Database] = []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        del app
        async with (
            await Database.open(path, migrations=ALL_MIGRATIONS) as database,
            AsyncExitStack() as stack,
        ):
            opened.append(database)
            if len(inspect.signature(make_deps).parameters) == 2:
                deps = await make_deps(database, stack)  # type: ignore[call-arg]
            else:
                deps = await make_deps(database)  # type: ignore[call-arg]
            mounted.routes.extend(dashboard_routes(deps))
            yield

    app = Starlette(routes=[Mount("/dashboard", app=mounted)], lifespan=lifespan)
    with TestClient(app, follow_redirects=False) as test_client:
        yield Served(test_client, opened[0]).as_(principal)


@dataclasses.dataclass
class QuietChannel:
    """A channel source and adapter that never receives nor delivers anything."""

    channel_id: ChannelId

    async def messages(self) -> AsyncIterator[InboundMessage]:
        return
        yield  # pragma: no cover - an async generator that ends at once

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        del conversation_id, event


def pair(
    name: str, describe: str = "", health: ChannelHealth | None = None, *, receiving: bool = True
) -> ChannelPair:
    channel = QuietChannel(ChannelId(name))
    received = anyio.Event()
    if receiving:
        received.set()
    return ChannelPair(channel, channel, describe, received, health=health or ChannelHealth())


def pairs(*items: ChannelPair) -> Sequence[ChannelPair]:
    return items
