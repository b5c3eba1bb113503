"""The dashboard as the daemon hands it to a transport that serves it behind its login
(see :mod:`thalos_bot.channels.listeners.served`)."""

from __future__ import annotations

from starlette.routing import Router
from starlette.types import ASGIApp

from thalos_bot.channels.listeners.served import DashboardMaker, PageLogin
from thalos_bot.dashboard.deps import DashboardDeps, DashboardSources


def dashboard_maker(sources: DashboardSources | None) -> DashboardMaker:
    """The dashboard's pages over the daemon's ``sources`` (None: every section says its
    store is not available), for whoever a transport's login admits. The pages load
    when a transport first serves them (a daemon whose transports serve no page starts
    without them)."""

    def make(login: PageLogin) -> ASGIApp:
        from thalos_bot.dashboard.routes import dashboard_routes

        deps = DashboardDeps.over(
            sources,
            principal_of=login.principal_of,
            is_owner=login.is_owner,
            csrf_token=login.csrf_token,
            check_csrf=login.check_csrf,
            csrf_field=login.csrf_field,
            person_of=login.person_of,
        )
        return Router(list(dashboard_routes(deps)))

    return make
