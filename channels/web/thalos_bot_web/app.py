"""The routes: login, the page, the event stream, sending, approving, tool images.

Every route but the login page sits behind :class:`~thalos_bot_web.guard.Guard`. A
principal's conversation id is its principal id, so all its tabs share one conversation
and one timeline.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import AsyncIterator, Container
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from importlib.resources import files
from string import Template
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from thalos_bot.channels.approvals.asking import CLOSED, NOT_YOURS
from thalos_bot.channels.approvals.relay import is_verdict
from thalos_bot.channels.intake.files import Intake
from thalos_bot.channels.intake.held import HeldFiles
from thalos_bot.channels.listeners.body import (
    SMALL_BODY,
    BodyCap,
    BodyTooLargeError,
    too_large,
)
from thalos_bot.channels.listeners.rate import rate_limited
from thalos_bot.channels.listeners.ready import readiness
from thalos_bot.channels.listeners.served import PageLogin, ServedApi, beside
from thalos_bot.channels.logins import SharedLogins
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.domain.ids import ConversationId
from thalos_bot.domain.people import ADMIN
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.config import UPLOAD_LIMIT, WebConfig
from thalos_bot_web.guard import Guard, login_of, refused
from thalos_bot_web.pairing import LoginCodes
from thalos_bot_web.sessions import COOKIE, Login, Sessions
from thalos_bot_web.timeline import EPOCH, RESET

log = structlog.get_logger(__name__)

KEEPALIVE = 15.0
"""Seconds between two comment lines on an idle stream (proxies close silent ones)."""
ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "login.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
PUBLIC_ASSETS = frozenset({"login.js", "style.css"})
"""What the login page needs before anyone is logged in."""
CSRF_FIELD = "csrf_token"
RATE_SCOPE = "web"
"""The per-address limit's buckets in the shared store (replicas)."""
ANSWER_BODY = 4096
"""What a login form or an approval's JSON may weigh."""
TOO_MANY = "That is more than {limit} files in one message. Send fewer at a time."
LOGIN_REFUSED = (
    '<p class="error">That code is unknown, used or expired. Run '
    "<code>thalos-bot web pair</code> for a new one.</p>"
)


def asset(name: str) -> str:
    return files("thalos_bot_web").joinpath("static", name).read_text(encoding="utf-8")


def too_long(chars: int | None, limit: int) -> str:
    size = "too long" if chars is None else f"{chars:,} characters long"
    return (
        f"That message is {size}; the web chat takes at most {limit:,} characters. "
        "Send it as a text file instead, or in parts."
    )


@dataclass(slots=True)
class WebApp:
    config: WebConfig
    adapter: WebAdapter
    sessions: Sessions
    logins: SharedLogins
    """The logouts and the one-time login codes (the daemon's store)."""
    intake: Intake
    uploads: HeldFiles
    group: TaskGroup
    """Where a message's files wait to be let go."""
    host: ChannelHost
    """The daemon's side: its agents (the header's picker, the first screen's greeting),
    its dashboard (behind the login), its webhooks, and on replicas the shared store the
    per-address limit is counted in, for the whole bot."""
    seats: Seats
    """Whom each login runs as (its person)."""
    api: ServedApi | None = None
    """The OpenAI-compatible API (``api = true``)."""
    draining: bool = False
    """The daemon is stopping: ``GET /readyz`` answers 503, so that a balancer that
    checks it sends nothing more here before the listener closes."""

    def build(self) -> ASGIApp:
        """The listener's app, every request behind the per-address rate limit."""
        routes: list[BaseRoute] = [
            Route("/", self.page),
            Route("/login", self.login_page, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/login/{name}", partial(_asset, served=PUBLIC_ASSETS)),
            Route("/static/{name}", partial(_asset, served=ASSETS)),
            Route("/api/events", self.events),
            Route("/api/send", self.send, methods=["POST"]),
            Route("/api/approve", self.approve, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/media/{key}", self.media),
            Route("/favicon.ico", lambda _: Response(status_code=204)),
        ]
        if (dashboard := self.host.dashboard) is not None:
            routes.append(Mount("/dashboard", app=dashboard(self._page_login())))
        app = Starlette(routes=routes, exception_handlers={BodyTooLargeError: too_large})
        served: ASGIApp = Guard(
            BodyCap(app, self._body_limit_of), self.sessions, lambda p: p in self.config.principals
        )
        # Outside the login, each checking its own credential (a key, a hook's signature);
        # a hook's path is asked first.
        for outside in (self.api.served if self.api else None, self.host.hooks):
            if outside is not None:
                served = beside(outside, served)
        config = self.config
        rates = self.host.rates
        limited = rate_limited(served, config.rate_limit, config.rate_burst, rates, RATE_SCOPE)
        return beside(readiness(lambda: not self.draining), limited)

    def _body_limit_of(self, path: str) -> int:
        """The most of a body a request to ``path`` may send, counted as it arrives."""
        if path == "/api/send":
            return self._body_limit()
        if path in {"/login", "/api/approve"}:
            return ANSWER_BODY
        return SMALL_BODY

    def _page_login(self) -> PageLogin:
        """The dashboard behind the same login. The owners, and people holding the
        ``admin`` role, see everyone's sessions, spend, schedules and the audit, and may
        change things; anyone else logged in sees their own person's sessions, spend and
        schedules, and no audit. Its forms carry the CSRF token in a field (they work
        without script); the guard leaves that check to :meth:`_dashboard_csrf`, which
        the dashboard awaits before any change."""
        owners = self.config.owners or self.config.principals[:1]
        seats = self.seats
        return PageLogin(
            principal_of=lambda request: login_of(request.scope).principal,
            is_owner=lambda login: login in owners or ADMIN in seats.context(login).roles,
            csrf_token=lambda request: self.sessions.csrf(login_of(request.scope)),
            check_csrf=self._dashboard_csrf,
            csrf_field=CSRF_FIELD,
            person_of=lambda login: seats.context(login).id,
        )

    async def _dashboard_csrf(self, request: Request) -> bool:
        login = login_of(request.scope)
        token = request.headers.get("x-csrf-token")
        if token is None:
            form = await request.form(max_files=0, max_fields=16, max_part_size=4096)
            field = form.get(CSRF_FIELD)
            token = field if isinstance(field, str) else None
        return self.sessions.csrf_ok(login, token)

    def _conversation(self, request: Request) -> tuple[Login, ConversationId]:
        login = login_of(request.scope)
        return login, ConversationId(login.principal)

    # -- login ----------------------------------------------------------------------

    async def login_page(self, request: Request) -> Response:
        return _login_page(request.query_params.get("code", "")[:64])

    async def login(self, request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=4, max_part_size=1024)
        code = str(form.get("code", ""))
        principal = await LoginCodes(self.logins).take(code)
        if principal is None or principal not in self.config.principals:
            log.info("web_login_refused")
            return _login_page("", LOGIN_REFUSED, status_code=401)
        cookie, _ = self.sessions.new(principal)
        log.info("web_login", principal=principal)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE,
            cookie,
            max_age=int(self.sessions.ttl),
            httponly=True,
            samesite="strict",
            secure=self._secure(request),
            path="/",
        )
        return response

    def _secure(self, request: Request) -> bool:
        """Whether the login cookie is marked Secure: always on a public page (it is
        behind a TLS proxy, which may sit on another address whose forwarded scheme is
        not trusted), else when the request came over https."""
        return self.config.public or request.url.scheme == "https"

    async def logout(self, request: Request) -> Response:
        login = login_of(request.scope)
        self.sessions.revoke(login)
        # In the store (every replica reads it within a second or so, and ends its
        # streams), so that it outlives a restart.
        await self.logins.revoke(login.principal, login.nonce, login.expires_at)
        # The login's open streams (another tab, a copied cookie) see it is gone and end.
        self.adapter.timeline(ConversationId(login.principal)).wake()
        log.info("web_logout", principal=login.principal)
        response = JSONResponse({"ok": True})
        response.delete_cookie(
            COOKIE, path="/", httponly=True, samesite="strict", secure=self._secure(request)
        )
        return response

    # -- the page ---------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        login = login_of(request.scope)
        first = self.host.catalog.default
        page = Template(asset("index.html")).substitute(
            csrf=html.escape(self.sessions.csrf(login), quote=True),
            principal=html.escape(login.principal, quote=True),
            agents="".join(
                f'<option value="{html.escape(a.id, quote=True)}"'
                f"{' selected' if a.id == first.id else ''}>"
                f"{html.escape(a.name)}</option>"
                for a in self.host.catalog
            ),
            greeting=html.escape(f"Hello! You are talking to {first.name}: {first.description}"),
        )
        return HTMLResponse(page)

    async def media(self, request: Request) -> Response:
        _, conversation = self._conversation(request)
        key = request.path_params["key"]
        found = await self.adapter.relay.store.media(conversation, key)
        if found is None:
            return Response(status_code=404)
        media_type, data = found
        return Response(data, media_type=media_type)

    # -- the stream --------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        login, conversation = self._conversation(request)
        last = request.headers.get("last-event-id") or request.query_params.get("last")
        return StreamingResponse(
            self._stream(login, conversation, last),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    async def _stream(
        self, login: Login, conversation: ConversationId, last: str | None
    ) -> AsyncIterator[bytes]:
        """The conversation's events for as long as ``login`` holds: a logout (which
        wakes the stream) or the login's expiry ends it, as the daemon stopping does."""
        log.info("web_stream_opened", principal=login.principal, resumed=last is not None)
        timeline = self.adapter.timeline(conversation)
        # What the store holds (other replicas wrote), up to now: the id the browser
        # names is known.
        await self.adapter.relay.catch_up(conversation)
        cursor = last
        yield b"retry: 1000\n\n"
        while self.sessions.live(login):
            waiter = timeline.waiter()
            reset, batch = timeline.since(cursor)
            if reset:
                yield RESET
            if batch:
                yield b"".join(event.sse for event in batch)
                cursor = batch[-1].id
            elif reset or cursor is None:
                cursor = f"{EPOCH}-{timeline.last_serial}"
            if timeline.closed:
                return
            with anyio.move_on_after(min(KEEPALIVE, self.sessions.remaining(login))) as idle:
                await waiter.wait()
            if idle.cancelled_caught and self.sessions.live(login):
                yield b": keepalive\n\n"
        log.info("web_stream_ended", principal=login.principal, reason="login_ended")

    # -- sending ---------------------------------------------------------------------

    def _body_limit(self) -> int:
        return self.config.max_files * UPLOAD_LIMIT + self.config.max_message_chars * 4 + 65536

    async def send(self, request: Request) -> Response:
        login, conversation = self._conversation(request)
        limit = self._body_limit()
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return refused(413, _too_big(limit))
        cap = self.config.max_message_chars
        try:
            # The body is counted as it arrives (BodyCap): past the limit this raises.
            form = await request.form(
                max_files=self.config.max_files + 1, max_fields=8, max_part_size=cap * 4 + 1024
            )
        except BodyTooLargeError:
            return refused(413, _too_big(limit))
        except (MultiPartException, HTTPException):
            # Starlette reports a part over max_part_size as a 400 HTTPException.
            return refused(413, too_long(None, cap))
        try:
            text = form.get("text", "")
            if not isinstance(text, str):
                return refused(400, "The message text is missing.")
            if len(text) > cap:
                return refused(413, too_long(len(text), cap))
            uploads = [
                (item.filename or "file", item.content_type, await item.read())
                for item in form.getlist("files")
                if isinstance(item, UploadFile)
            ]
        finally:
            await form.close()
        if not text.strip() and not uploads:
            return refused(400, "Type a message or attach a file.")
        if len(uploads) > self.config.max_files:
            return refused(413, TOO_MANY.format(limit=self.config.max_files))
        # The files are held until the kit's intake fetches them, checks and converts
        # them (a refusal is a notice on the page); a send waits while too many are held.
        await self.uploads.room([len(data) for _, _, data in uploads])
        self.adapter.said(conversation, text, [name for name, _, _ in uploads])
        sender = self.seats.sender(login.principal, login.principal)
        handled = anyio.Event()
        message = InboundMessage(
            self.adapter.channel_id, conversation, sender, text, datetime.now(UTC), handled=handled
        )
        files = tuple(
            self.uploads.hold(data, name, mime, f"web:{hashlib.sha256(data).hexdigest()[:32]}")
            for name, mime, data in uploads
        )
        self.intake.receive(message, files)
        if files:
            self.group.start_soon(self.uploads.release_when, handled, files)
        return JSONResponse({"ok": True}, status_code=202)

    async def approve(self, request: Request) -> Response:
        login, conversation = self._conversation(request)
        try:
            body: Any = await request.json()
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            return refused(400, "That answer is not JSON.")
        key = body.get("id") if isinstance(body, dict) else None
        verdict = body.get("verdict") if isinstance(body, dict) else None
        if not isinstance(key, str) or not is_verdict(verdict):
            return refused(400, "Answer with approved, approved-session or denied.")
        # Only a question a page shows open is relayed to the replica that asked it.
        await self.adapter.relay.catch_up(conversation)
        if not self.adapter.asked(conversation, key):
            return refused(409, CLOSED)
        told = self.adapter.asking.answer(
            key, conversation, key, verdict, user=login.principal, who=login.principal
        )
        if told is None or told == CLOSED:
            return refused(403 if told is None else 409, told or NOT_YOURS)
        return JSONResponse({"ok": True})


def _login_page(code: str, error: str = "", status_code: int = 200) -> Response:
    page = Template(asset("login.html")).substitute(code=html.escape(code, quote=True))
    return HTMLResponse(page.replace("<!--error-->", error), status_code=status_code)


async def _asset(request: Request, served: Container[str]) -> Response:
    name = request.path_params["name"]
    if name not in served:
        return Response(status_code=404)
    return Response(asset(name), media_type=ASSETS[name])


def _too_big(limit: int) -> str:
    return (
        f"That message is larger than {limit // (1024 * 1024)} MB in all, the most the web "
        "chat takes at once. Send fewer or smaller files."
    )
