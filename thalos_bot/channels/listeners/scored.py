"""How ``thalos-bot doctor --security`` scores an HTTP listener a transport serves on
the kit's bounded server (:mod:`.server`): where it binds, and the limits it keeps,
said the same way for every listener. What else the transport says about it (who may
use it, how TLS reaches it) is its own."""

from __future__ import annotations

from thalos_bot.channels.checks import Check, Outcome
from thalos_bot.channels.listeners.address import is_loopback


def bind_check(
    listener: str,
    listen: str,
    host: str,
    *,
    local: str,
    public: str,
    outcome: Outcome = "ok",
    fix: str = "",
) -> Check:
    """The ``<listener> bind`` line for ``listen`` (host:port): ok on a loopback
    ``host`` (``local`` says why that is enough), else ``outcome`` with ``public``
    after the address (and its ``fix``)."""
    name = f"{listener} bind"
    if is_loopback(host):
        return Check(name, "ok", f"{listen} ({local})")
    return Check(name, outcome, f"{listen}{public}", fix)


def limits_check(
    listener: str,
    *,
    header_timeout: float,
    bodies: str,
    max_connections: int,
    rate_limit: int,
    rate_burst: int,
    burst_note: str = "",
    after: str = "",
    unlimited: Outcome = "ok",
    fix: str = "",
) -> Check:
    """The ``<listener> limits`` line: its header timeout, ``bodies`` (what a request
    may weigh), its connection cap and its per-address rate limit (``burst_note`` added
    to the burst, ``after`` to the line). Without a rate limit (0) it is ``unlimited``,
    with ``fix``."""
    rate = (
        f"{rate_limit} requests/min per address (burst {rate_burst}{burst_note})"
        if rate_limit
        else "no per-address rate limit"
    )
    detail = (
        f"header timeout {header_timeout:g}s; bodies {bodies}; at most {max_connections} "
        f"connections; {rate}{after}"
    )
    if rate_limit == 0 and unlimited != "ok":
        return Check(f"{listener} limits", unlimited, detail, fix)
    return Check(f"{listener} limits", "ok", detail)
