"""The ASGI layer in front of every route: login, CSRF, and the security headers.

* No valid session cookie, no content: every path but the login page and its two
  assets answers 401 (the event stream and unknown paths included).
* Every request that is not GET or HEAD carries the session's CSRF token in
  ``X-CSRF-Token`` (the login form, which has no session yet, is exempt), and an
  ``Origin`` header, when the browser sends one, must be this server's.
* Every response has a Content-Security-Policy with no inline script or style, and
  nothing from another origin.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thalos_bot_web.sessions import COOKIE, Login, Sessions

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "media-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
PUBLIC_PATHS = frozenset({"/login", "/login/login.js", "/login/style.css"})
SAFE_METHODS = frozenset({"GET", "HEAD"})
CSRF_HEADER = "x-csrf-token"
FORM_CHECKED = "/dashboard/"

NOT_LOGGED_IN = (
    "Not logged in. Run `thalos-bot web pair` on the machine the bot runs on and open "
    "the link it prints."
)


LOGIN_FIRST = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<title>thalos-bot · log in</title><link rel="stylesheet" href="/login/style.css">'
    '</head><body class="login"><form id="login" action="/login" method="get">'
    "<h1>thalos-bot</h1><p>Not logged in. Run <code>thalos-bot web pair</code> on the "
    "machine the bot runs on and open the link it prints, or type its code on the "
    '<a href="/login">login page</a>.</p></form></body></html>'
)


def login_of(scope: Scope) -> Login:
    """The login the guard admitted (only on routes behind it)."""
    login = scope["state"]["login"]
    assert isinstance(login, Login)
    return login


class Guard:
    def __init__(self, app: ASGIApp, sessions: Sessions, allowed: Callable[[str], bool]) -> None:
        self._app = app
        self._sessions = sessions
        self._allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *SECURITY_HEADERS]
            await send(message)

        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, with_headers)
            return
        await self._app(scope, receive, with_headers)

    def _refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        method = scope["method"]
        if method not in SAFE_METHODS and not _same_origin(scope, headers):
            return refused(403, "This request came from another site and was refused.")
        path = scope["path"]
        if path in PUBLIC_PATHS:
            return None
        login = self._sessions.read(cookie_parser(headers.get("cookie", "")).get(COOKIE))
        if login is None or not self._allowed(login.principal):
            if method == "GET" and "text/html" in headers.get("accept", ""):
                return HTMLResponse(LOGIN_FIRST, status_code=401)  # a person at a browser
            return refused(401, NOT_LOGGED_IN)
        # The dashboard's plain forms carry the token in a field, which only the route
        # can read; the dashboard checks it (awaiting the host's check) before acting.
        form_checked = path.startswith(FORM_CHECKED)
        if (
            method not in SAFE_METHODS
            and not form_checked
            and not self._sessions.csrf_ok(login, headers.get(CSRF_HEADER))
        ):
            return refused(403, "The page's security token is missing or wrong; reload the page.")
        scope.setdefault("state", {})["login"] = login
        return None


def _same_origin(scope: Scope, headers: Headers) -> bool:
    origin = headers.get("origin")
    if origin is None:
        return True  # not a browser's cross-site form or fetch (they send Origin)
    host = headers.get("host", "")
    scheme = scope.get("scheme", "http")
    return origin in {f"{scheme}://{host}", f"http://{host}", f"https://{host}"}


def refused(status: int, text: str) -> Response:
    """A request refused, with ``text`` for the page to show."""
    return JSONResponse({"error": text}, status_code=status)
