"""The web channel as the core sees it before it runs (no Starlette or uvicorn import
here): see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.checks import Check
from thalos_bot.channels.listeners.address import is_loopback
from thalos_bot.channels.manifest import Admission, plug_in
from thalos_bot_web.config import WebConfig

TLS_NOTE = "serves other machines: put it behind a TLS proxy (HTTPS), set public_url"


def _seat(conversation_id: str) -> Seat[str]:
    """A web conversation is its principal's: written to while they may still log in."""
    return Seat(user=conversation_id)


def _summary(config: WebConfig) -> str:
    who = ", ".join(config.principals)
    public = f"; public: {TLS_NOTE}" if not is_loopback(config.host) else ""
    return f"a chat page on {config.base_url()} for {who}{public}"


async def web_checks(config: WebConfig, *, offline: bool) -> list[Check]:
    # Public only behind a TLS proxy with an https:// public_url: WebConfig refuses less.
    if is_loopback(config.host):
        return [Check("web", "ok", f"listens on {config.listen} (this machine only)")]
    return [Check("web", "ok", f"listens on {config.listen}, reachable from other machines")]


manifest = plug_in(
    "web",
    WebConfig,
    _summary,
    admission=Admission(_seat, "web", users_key="principals"),
    checks="thalos_bot_web.manifest:web_checks",
    exposure=True,
    answers_anywhere=True,
    order=20,
    question="Serve the web chat page on this machine?",
    pair_step="a one-time login link (after `run` starts)",
    serves="the chat page on http://127.0.0.1:8765",
)
