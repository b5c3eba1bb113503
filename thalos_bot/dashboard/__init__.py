"""The dashboard: server-rendered pages about the running daemon, for its web channel.

Sections (paths relative to where the host mounts the routes, e.g. ``/dashboard``):

- ``/``: channels, each up or down, with its last poll or event and last error;
- ``/sessions``: live and recent sessions (agent, age, turns, tokens, cost) and an SVG
  plot of tokens and cost per day for the last 30 days, drawn on the server;
- ``/schedules``: next run and last result; for the owner, POST
  ``/schedules/{id}/pause|resume|cancel`` (each form carries the host's CSRF token);
- ``/audit``: approval decisions, filtered by the query parameters ``agent``, ``tool``,
  ``decision``, ``from`` and ``to`` (dates, ``YYYY-MM-DD``, in the limits' time zone;
  ``to`` inclusive);
- ``/tools``: tool sources (MCP servers) with their state, and the skills catalogue;
- ``/memory``: how many memories, the embeddings mode, how many wait for a reindex;
- ``/static/dashboard.css``: the one stylesheet. Pages have no inline script or style.

The interface for the host. The daemon hands a channel the dashboard as
``ChannelHost.dashboard`` (:func:`thalos_bot.dashboard.mount.dashboard_maker` over its
stores, None where no daemon runs); the web channel gives it its login and CSRF hooks
(a :class:`~thalos_bot.channels.listeners.served.PageLogin`) and mounts the app it gets
under ``/dashboard``. The same, by hand::

    from thalos_bot.dashboard.deps import DashboardDeps
    from thalos_bot.dashboard.routes import dashboard_routes

    deps = DashboardDeps.over(
        sources,
        principal_of=lambda request: ...,   # the logged-in principal id, or None
        is_owner=lambda principal: ...,     # may change schedules
        csrf_token=lambda request: ...,     # the token forms carry, in field csrf_field
        check_csrf=async_check,             # async (request) -> bool; False: 403
    )
    app = Starlette(routes=[Mount("/dashboard", routes=dashboard_routes(deps))])

Every field can also be given directly (tests, another host)::

    deps = DashboardDeps(
        principal_of=lambda request: ...,   # the logged-in principal id, or None
        is_owner=lambda principal: ...,     # may change schedules
        csrf_token=lambda request: ...,     # the token forms carry, in field csrf_field
        check_csrf=async_check,             # async (request) -> bool; False: 403
        channels=lambda: pairs,             # the daemon's ChannelPairs
        sessions=session_store,             # .recent(limit)
        ledger=usage_ledger,                # .session_models(id), .days(first, last)
        prices=price_table, timezone=settings.limits.timezone,
        schedules=schedule_store,           # .listing(), .pause, .resume, .cancel
        on_schedule_change=scheduler.wake,
        audit=audit_store,                  # .search(AuditQuery)
        tool_sources=lambda: catalog.sources,
        skills=skill_store,                 # .stored()
        memory=MemoryView(memory.store, settings.memory.embeddings.mode, memory.reindexer),
    )

Every page answers 401 when ``principal_of`` gives None; a POST answers 403 when the
principal is not the owner or ``check_csrf`` says no, before anything changes.

This package imports nothing itself: the daemon's stores use the protocols in
:mod:`~thalos_bot.dashboard.deps` without loading the pages, the web server, or the
tool sources the pages describe.
"""
