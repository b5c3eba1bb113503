"""Webhook delivery for the Telegram fake, the way Telegram does it.

While a webhook is set, Telegram POSTs each update to its URL as JSON and forgets it
once the answer is 2xx. One chat's updates go one at a time, in order (the next only
after the previous was answered 2xx); different chats' go concurrently, up to the
webhook's ``max_connections``. Every request carries ``X-Telegram-Bot-Api-Secret-Token``
when a secret was set. A non-2xx answer, a refused connection or no answer within the
timeout is retried later (the update stays pending, and the chat's later updates wait
behind it). On demand (:meth:`WebhookDelivery.duplicate_next`) an update is delivered a
second time after it was answered, as Telegram sometimes does after a timeout it could
not tell apart from a failure; :meth:`WebhookDelivery.delay_next` holds one back.

The URL set is a public ``https://`` address; the test says where that address really
is (:meth:`WebhookDelivery.route`, e.g. HAProxy on loopback): the path is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import aiohttp

from tests.fakes.telegram_updates import Json, UpdateQueue

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


@dataclass(frozen=True, slots=True)
class Attempt:
    update_id: int
    chat: int | None
    status: int | None
    """The HTTP status answered, or None (connection refused, reset, timed out)."""
    started: float
    ended: float
    duplicate: bool = False


def chat_of(update: Json) -> int | None:
    for key, value in update.items():
        if key == "update_id" or not isinstance(value, dict):
            continue
        if "chat" in value:
            return int(value["chat"]["id"])
        message = value.get("message")
        if isinstance(message, dict) and "chat" in message:
            return int(message["chat"]["id"])
        sender = value.get("from")
        if isinstance(sender, dict):
            return int(sender["id"])
    return None


class WebhookDelivery:
    def __init__(
        self,
        queue: UpdateQueue,
        lock: threading.RLock,
        changed: Callable[[], None],
        *,
        timeout: float = 10.0,
        retry_delay: float = 0.2,
    ) -> None:
        self._queue = queue
        self._lock = lock
        self._changed = changed
        self.timeout = timeout
        self.retry_delay = retry_delay
        self.attempts: list[Attempt] = []
        self._route: str | None = None
        self._duplicates = 0
        self._delays: list[float] = []
        self._busy: set[int | None] = set()
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None

    # -- from the test (any thread, the fake's lock not held) -------------------

    def route(self, base: str) -> None:
        """Deliver to ``base`` (``http://127.0.0.1:PORT``) what is set for the URL."""
        with self._lock:
            self._route = base.rstrip("/")
        self.wake()

    def duplicate_next(self, count: int = 1) -> None:
        with self._lock:
            self._duplicates += count

    def delay_next(self, seconds: float) -> None:
        with self._lock:
            self._delays.append(seconds)

    def answered(self, update_id: int) -> list[int | None]:
        """The statuses each delivery of ``update_id`` got, in order."""
        with self._lock:
            return [a.status for a in self.attempts if a.update_id == update_id]

    # -- on the fake's loop ------------------------------------------------------

    def start(self) -> None:
        """On the fake's loop."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._run())

    def cancel(self) -> None:
        """On the fake's loop, as it stops."""
        if self._task is not None:
            self._task.cancel()

    def wake(self) -> None:
        """Look at the queue again; from any thread."""
        if self._loop is not None and self._wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                self._loop.call_soon_threadsafe(self._wake.set)

    async def _run(self) -> None:
        assert self._wake is not None
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            running: set[asyncio.Task[None]] = set()
            while True:
                self._wake.clear()
                for update, target in self._due():
                    task = asyncio.create_task(self._deliver(session, update, target))
                    running.add(task)
                    task.add_done_callback(running.discard)
                await self._wake.wait()

    def _due(self) -> list[tuple[Json, str]]:
        """The first pending update of each idle chat, up to max_connections."""
        with self._lock:
            hook = self._queue.webhook
            if hook is None or self._route is None:
                return []
            target = self._route + (urlsplit(hook.url).path or "/")
            chosen: list[tuple[Json, str]] = []
            for update in self._queue.deliverable(10_000):
                if len(self._busy) >= hook.max_connections:
                    break
                chat = chat_of(update)
                if chat in self._busy:
                    continue
                self._busy.add(chat)
                chosen.append((update, target))
            return chosen

    async def _deliver(self, session: aiohttp.ClientSession, update: Json, target: str) -> None:
        chat = chat_of(update)
        with self._lock:
            delay = self._delays.pop(0) if self._delays else 0.0
        if delay:
            await asyncio.sleep(delay)
        try:
            status = await self._post(session, update, target, duplicate=False)
            if status is not None and 200 <= status < 300:
                with self._lock:
                    twice = self._duplicates > 0
                    if twice:
                        self._duplicates -= 1
                    self._queue.forget(update["update_id"])
                    self._changed()
                if twice:
                    await self._post(session, update, target, duplicate=True)
            else:
                await asyncio.sleep(self.retry_delay)
        finally:
            with self._lock:
                self._busy.discard(chat)
            self.wake()

    async def _post(
        self, session: aiohttp.ClientSession, update: Json, target: str, *, duplicate: bool
    ) -> int | None:
        headers = {"Content-Type": "application/json"}
        with self._lock:
            hook = self._queue.webhook
            if hook is not None and hook.secret_token is not None:
                headers[SECRET_HEADER] = hook.secret_token
        started = time.monotonic()
        status: int | None
        error: str | None = None
        try:
            async with session.post(target, data=json.dumps(update), headers=headers) as answer:
                await answer.read()
                status = answer.status
                if not 200 <= status < 300:
                    error = f"Wrong response from the webhook: {status} {answer.reason}"
        except TimeoutError:
            status, error = None, "Read timeout expired"
        except (aiohttp.ClientError, OSError):
            status, error = None, "Connection refused"
        with self._lock:
            if error is not None and self._queue.webhook is not None:
                failed = (int(time.time()), error)
                self._queue.webhook = replace(self._queue.webhook, last_error=failed)
            self.attempts.append(
                Attempt(
                    update["update_id"],
                    chat_of(update),
                    status,
                    started,
                    time.monotonic(),
                    duplicate,
                )
            )
            self._changed()
        return status
