"""What a channel says about itself for ``thalos-bot status``: when it last worked and
the last thing that went wrong. A channel updates it; the service layer reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from thalos_bot.channels.ports import ChannelSource, InboundMessage, SourceNotice
from thalos_bot.domain.ids import ChannelId


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class ChannelHealth:
    """``last_ok_at``: the last successful poll or event. ``last_error``: a short,
    secret-free reason a user can act on (never an exception's text)."""

    last_ok_at: datetime | None = None
    last_error: str | None = None
    last_error_at: datetime | None = None
    clock: Callable[[], datetime] = field(default=_now, repr=False, compare=False)

    def ok(self) -> None:
        self.last_ok_at = self.clock()

    def failed(self, reason: str) -> None:
        self.last_error = reason
        self.last_error_at = self.clock()

    @property
    def retrying(self) -> bool:
        """It failed since it last worked (or never worked): it is trying again."""
        if self.last_error_at is None:
            return False
        return self.last_ok_at is None or self.last_error_at > self.last_ok_at


class NotingSource:
    """A channel's source that marks its health ``ok`` at each message it hands on: so a
    transport with nothing to poll (the terminal, the web page) still says when it last
    worked."""

    def __init__(self, inner: ChannelSource, health: ChannelHealth) -> None:
        self.inner = inner
        self.health = health
        self.channel_id: ChannelId = inner.channel_id

    async def messages(self) -> AsyncIterator[InboundMessage | SourceNotice]:
        # Closed with this one: the inner source's own clean-up (a terminal's reader, a
        # connection) runs when the pump stops reading, not whenever it is collected.
        inner = self.inner.messages()
        try:
            async for item in inner:
                if isinstance(item, InboundMessage):
                    self.health.ok()
                yield item
        finally:
            close = getattr(inner, "aclose", None)
            if close is not None:
                await close()
