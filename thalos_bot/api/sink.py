"""The API's requests waiting on their conversation's deliveries: one request at a time
per conversation (another one meanwhile is told the conversation is busy).

On one process the conversations held are this sink's. On replicas (``claims``: the
shared store's :class:`~thalos_bot.cluster.api_claims.PgConversationClaims`) a request
also claims its conversation for the whole bot, in one round trip, after the local
check (a second request on the same replica pays none): a request of the same
conversation on another replica is then busy too. The claim is renewed while the
answer runs (:meth:`ApiSink.keep`) and released when it ends. A store that cannot be
reached leaves the check to this process (logged once per outage).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from thalos_bot.channels import notices
from thalos_bot.channels.ports import Delivery, Notice
from thalos_bot.storage.database import DatabaseError

log = structlog.get_logger(__name__)

Receiving = MemoryObjectReceiveStream[Delivery]
CLAIM_BOUND = 5.0
"""Seconds a claim, renewal or release may take before it is given up."""


class ConversationClaims(Protocol):
    span: float

    async def claim(self, conversation: str) -> int | None:
        """A token, or None while another request holds the conversation."""
        ...

    async def renew(self, conversation: str, token: int) -> bool: ...

    async def release(self, conversation: str, token: int | None) -> None:
        """``None``: whatever this replica may hold there (a claim that timed out)."""
        ...


@dataclass
class ApiSink:
    _waiting: dict[str, tuple[MemoryObjectSendStream[Delivery], Receiving]] = field(
        default_factory=dict
    )
    claims: ConversationClaims | None = None
    """Replicas: the conversations held for the whole bot (None: this process only)."""
    _tokens: dict[str, int | None] = field(default_factory=dict)
    """The claims' tokens; None where the claim's answer never came (it may still have
    been made: released by this replica's name when the request ends)."""
    _down: bool = False
    _letting_go: set[str] = field(default_factory=set)
    """Conversations whose claim is being released by this replica's name."""

    closed: bool = False
    """The channel is closing (the daemon stops): new requests are told to come back."""

    def close(self) -> None:
        """The daemon stops: each waiting request hears the pump's word for it (answered
        503, come back), since no answer will come here any more."""
        self.closed = True
        for send, _ in self._waiting.values():
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError):
                send.send_nowait(Notice(notices.shutting_down(), "warning"))

    def deliver(self, conversation: str, event: Delivery) -> None:
        held = self._waiting.get(conversation)
        if held is not None:
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError):
                held[0].send_nowait(event)

    async def claim(self, conversation: str) -> Receiving | None:
        """The conversation's deliveries, for one request; None while another has them
        (here, or on another replica)."""
        if conversation in self._waiting:
            return None
        send, receive = anyio.create_memory_object_stream[Delivery](1000)
        self._waiting[conversation] = (send, receive)  # before the round trip: held here
        if self.claims is None:
            return receive
        was_down = self._down
        try:
            with anyio.fail_after(CLAIM_BOUND):
                token = await self.claims.claim(conversation)
        except (DatabaseError, TimeoutError) as exc:
            self._went_down(exc)
            if not was_down:  # the first failure may have claimed; later ones reach nothing
                self._tokens[conversation] = None
            return receive
        except BaseException:  # cancelled: this request is gone, so is its hold
            del self._waiting[conversation]
            send.close()
            receive.close()
            raise
        self._came_back()
        if token is None:
            del self._waiting[conversation]
            send.close()
            receive.close()
            return None
        self._tokens[conversation] = token
        return receive

    async def keep(self, conversation: str, receive: Receiving) -> None:
        """Renew the conversation's claim while ``receive`` holds it (run beside the
        answer; cancelled when it ends)."""
        if self.claims is None:
            return
        while True:
            await anyio.sleep(self.claims.span / 3)
            held = self._waiting.get(conversation)
            token = self._tokens.get(conversation)
            if held is None or held[1] is not receive or token is None:
                return
            try:
                with anyio.fail_after(CLAIM_BOUND):
                    kept = await self.claims.renew(conversation, token)
            except (DatabaseError, TimeoutError) as exc:
                self._went_down(exc)
                continue
            if not kept:
                log.warning("api_claim_lost", conversation=conversation)
                self._tokens.pop(conversation, None)
                return

    async def done(self, conversation: str, receive: Receiving) -> None:
        """The request holding ``receive`` lets the conversation go (again: nothing)."""
        held = self._waiting.get(conversation)
        if held is None or held[1] is not receive or conversation in self._letting_go:
            return
        held[0].close()
        if conversation not in self._tokens or self.claims is None:
            del self._waiting[conversation]
            return
        token = self._tokens.pop(conversation)
        if token is not None:
            del self._waiting[conversation]  # a later claim's row never has this token
        else:
            # The release goes by this replica's name: held here until it is done, so no
            # request of the conversation claims meanwhile (and is released with it).
            self._letting_go.add(conversation)
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLAIM_BOUND):
                try:
                    await self.claims.release(conversation, token)
                except DatabaseError as exc:  # it runs out by itself within its span
                    self._went_down(exc)
        finally:
            if token is None:
                self._letting_go.discard(conversation)
                del self._waiting[conversation]

    def _went_down(self, exc: BaseException) -> None:
        if not self._down:
            self._down = True
            log.warning("api_claims_down", error=type(exc).__name__, counted="per replica")

    def _came_back(self) -> None:
        if self._down:
            self._down = False
            log.info("api_claims_back")
