"""The HTTP side of the hooks: verify, dedupe, store, answer 202, wake the worker.

Nothing runs here. A delivery whose signature holds is rendered into its task (the
template's words, then the payload's fields as a fenced block of untrusted data that
the result guard has screened), stored as a pending row, and answered 202 at once; the
:class:`~thalos_bot.hooks.worker.HookWorker` runs it. A bad or missing signature is a
401 and a generic replay a 409; neither stores anything. A delivery seen already is
answered 200 and starts nothing. GitHub's ``ping`` (sent when a hook is made) gets 200.

The routes are served by the web channel's listener, behind its bounds: the web
channel mounts :meth:`HookIntake.routes` outside its login, since a hook authenticates
by its signature, and caps each body at :data:`HOOK_BODY`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from thalos_bot.config.hooks import HookSettings
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.security import SecurityContext
from thalos_bot.guard.guard import ResultGuard
from thalos_bot.hooks.signature import WINDOW, check
from thalos_bot.hooks.store import HookStore, NewDelivery
from thalos_bot.hooks.template import parse_template

log = structlog.get_logger(__name__)

HOOK_BODY = 1024 * 1024
"""The most a delivery's body may weigh (GitHub's issue and push payloads are far less)."""


def render_task(hook: HookSettings, payload: object, guard: ResultGuard) -> str:
    """The run's task: the template's words, then its fields as screened data."""
    template = parse_template(hook.prompt)
    words = template.text()
    if not template.fields:
        return words
    data = guard.screen(template.data(payload), source=f"the webhook {hook.name}")
    if data.verdict != "allow":
        log.warning("hook_payload_guarded", hook=hook.name, rules=list(data.rules))
    return f"{words}\n\n{data.text}"


class HookIntake:
    def __init__(
        self,
        hooks: Sequence[HookSettings],
        store: HookStore,
        guard: ResultGuard,
        default_agent: str,
        *,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.hooks = {hook.path: hook for hook in hooks}
        self.store = store
        self.guard = guard
        self.default_agent = default_agent
        self.environ = os.environ if environ is None else environ
        self.clock = clock
        self.wake: Callable[[], None] = lambda: None
        """Set by the host to the worker's wake once it runs."""
        for hook in hooks:
            if not self.environ.get(hook.secret_env):
                log.warning("hook_secret_missing", hook=hook.name, env=hook.secret_env)

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self.hooks)

    def routes(self) -> list[BaseRoute]:
        return [Route(path, self.handle, methods=["POST"]) for path in sorted(self.hooks)]

    async def handle(self, request: Request) -> Response:
        hook = self.hooks[request.url.path]
        bound = log.bind(hook=hook.name)
        body = await request.body()
        secret = self.environ.get(hook.secret_env, "")
        if not secret:
            bound.warning("hook_refused", status=401, reason="its secret is not set")
            return _answer(401, "The signature could not be checked.")
        headers = {k.lower(): v for k, v in request.headers.items()}
        checked = check(hook.scheme, secret.encode(), headers, body, time.time())
        if checked.status != 200:
            bound.info("hook_refused", status=checked.status, reason=checked.reason)
            text = "Bad signature." if checked.status == 401 else "Replayed or stale delivery."
            return _answer(checked.status, text)
        if headers.get("x-github-event") == "ping":
            return _answer(200, "pong")
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            bound.info("hook_refused", status=400, reason="the body is not JSON")
            return _answer(400, "The body is not JSON.")
        new = NewDelivery(
            hook=hook.name,
            dedupe_key=checked.dedupe_key,
            agent_id=hook.agent or self.default_agent,
            caller=SecurityContext.of(hook.principal, hook.roles),
            deliver_to=hook.address,
            task=render_task(hook, payload, self.guard),
        )
        if not await self.store.receive(new, self.clock(), WINDOW):
            bound.info("hook_duplicate", key=checked.dedupe_key)
            return _answer(200, "Seen already; nothing started.")
        bound.info("hook_accepted", key=checked.dedupe_key)
        self.wake()
        return _answer(202, "Accepted.")


def _answer(status: int, text: str) -> Response:
    return JSONResponse({"status": status, "message": text}, status_code=status)
