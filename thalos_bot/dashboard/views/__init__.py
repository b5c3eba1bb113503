"""The section pages: each reads its read model and renders it with
:mod:`thalos_bot.dashboard.layout`. A page is ``async (deps, request, base) -> str``."""
