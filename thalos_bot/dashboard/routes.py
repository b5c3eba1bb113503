"""The dashboard's Starlette routes: one GET page per section, the stylesheet, and the
owner's POST actions on schedules. Mounted by the host (the web channel) behind its
login; every handler still asks the host who is calling and refuses when nobody is."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from urllib.parse import urlencode

import structlog
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.views import audit, channels, memory, schedules, sessions, tools

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

    async def owners_form(request: Request, what: str) -> tuple[str | None, Response | None]:
        """The owner who posted a dashboard form, or the refusal to answer with."""
        principal = deps.principal_of(request)
        if principal is None:
            return None, PlainTextResponse("Log in first.", status_code=401)
        if not deps.is_owner(principal):
            return None, PlainTextResponse(f"Only the owner can {what}.", status_code=403)
        if not await deps.check_csrf(request):
            log.warning("dashboard_csrf_refused", principal=principal, path=request.url.path)
            return None, PlainTextResponse(
                "This form has expired or did not come from the dashboard; reload the page "
                "and try again.",
                status_code=403,
            )
        return principal, None

    async def act(request: Request) -> Response:
        principal, refused = await owners_form(request, "change schedules")
        if refused is not None:
            return refused
        action = str(request.path_params["action"])
        schedule_id = str(request.path_params["schedule_id"])
        if action not in ACTIONS:
            return PlainTextResponse("There is no such action.", status_code=404)
        outcome = await schedules.schedule_action(deps, action, schedule_id)
        log.info(
            "dashboard_schedule_action",
            principal=principal,
            action=action,
            schedule=schedule_id,
            outcome=outcome,
        )
        query = urlencode({"outcome": outcome, "action": action, "id": schedule_id})
        return RedirectResponse(f"{_base(request)}/schedules?{query}", status_code=303)

    async def lift(request: Request) -> Response:
        principal, refused = await owners_form(request, "lift a budget")
        if refused is not None:
            return refused
        if deps.budgets is None:
            return PlainTextResponse("Budgets are not kept here.", status_code=404)
        person = str(request.path_params["person"])
        await deps.budgets.lift(person)
        log.info("dashboard_budget_lifted", principal=principal, person=person)
        query = urlencode({"lifted": person})
        return RedirectResponse(f"{_base(request)}/sessions?{query}", status_code=303)

    return [
        Route("/", serve(channels.channels_page), methods=["GET"]),
        Route("/sessions", serve(sessions.sessions_page), methods=["GET"]),
        Route("/schedules", serve(schedules.schedules_page), methods=["GET"]),
        Route("/schedules/{schedule_id}/{action}", act, methods=["POST"]),
        Route("/people/{person}/lift", lift, methods=["POST"]),
        Route("/audit", serve(audit.audit_page), methods=["GET"]),
        Route("/tools", serve(tools.tools_page), methods=["GET"]),
        Route("/memory", serve(memory.memory_page), methods=["GET"]),
        Route("/static/dashboard.css", stylesheet, methods=["GET"]),
    ]
