"""The dashboard's Starlette routes: one GET page per section, the stylesheet, and the
owner's POST actions on schedules. Mounted by the host (the web channel) behind its
login; every handler still asks the host who is calling and refuses when nobody is."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

import structlog
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from thalos_bot.dashboard import pages
from thalos_bot.dashboard.deps import DashboardDeps

log = structlog.get_logger(__name__)

Page = Callable[[DashboardDeps, Request, str], Awaitable[str]]
ACTIONS = ("pause", "resume", "cancel")


def _base(request: Request) -> str:
    """Where the dashboard is mounted (Starlette's ``root_path`` under a Mount)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _stylesheet() -> bytes:
    return (resources.files("thalos_bot.dashboard") / "static" / "dashboard.css").read_bytes()


def dashboard_routes(deps: DashboardDeps) -> list[BaseRoute]:
    """The routes to mount (``Mount("/dashboard", routes=dashboard_routes(deps))``)."""
    css = _stylesheet()

    def serve(render: Page) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            principal = deps.principal_of(request)
            if principal is None:
                return PlainTextResponse("Log in first.", status_code=401)
            body = await render(deps, request, _base(request))
            return HTMLResponse(body, headers={"Cache-Control": "no-store"})

        return endpoint

    async def stylesheet(request: Request) -> Response:
        if deps.principal_of(request) is None:
            return PlainTextResponse("Log in first.", status_code=401)
        return Response(css, media_type="text/css", headers={"Cache-Control": "no-cache"})

    return [
        Route("/", serve(pages.channels_page), methods=["GET"]),
        Route("/sessions", serve(pages.sessions_page), methods=["GET"]),
        Route("/static/dashboard.css", stylesheet, methods=["GET"]),
    ]
