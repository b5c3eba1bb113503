"""A fallback chain: the providers an agent may use, tried in order.

The next provider is asked when one fails with an error another provider may not have
(rate limited, overloaded, a 5xx, unreachable, timed out: ``ProviderError.fallback``)
*before* it streamed any text or tool call; after that, the failure is the turn's (the
user has already read part of an answer). Each member is asked with its own model and
at most its own output limit. When a fallback member answers, a
:class:`~thalos_bot.providers.base.ModelFallback` event comes first, so the user can be
told which model answered; each member's usage events carry its model, so its tokens
are priced as that model's. When every member fails, the first member's error is raised
(it names the provider the user configured first).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass

import structlog

from thalos_bot.providers.base import (
    ModelEvent,
    ModelFallback,
    ModelProvider,
    ModelRequest,
    ModelUsage,
    ProviderError,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Member:
    id: str
    provider: ModelProvider
    model: str
    max_output_tokens: int


class FallbackProvider:
    """A :class:`~thalos_bot.providers.base.ModelProvider` over a chain of members; the
    first is asked with the request's own model."""

    name = "fallback"

    def __init__(self, members: Sequence[Member]) -> None:
        if not members:
            raise ValueError("a fallback chain needs at least one provider")
        self.members = tuple(members)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        first_error: ProviderError | None = None
        failed: list[str] = []
        for index, member in enumerate(self.members):
            asked = request
            if index > 0:
                asked = dataclasses.replace(
                    request,
                    model=member.model,
                    max_output_tokens=min(request.max_output_tokens, member.max_output_tokens),
                )
            answered = False
            try:
                async with aclosing(member.provider.stream(asked)) as events:
                    async for event in events:
                        if isinstance(event, ModelUsage):
                            # priced as the model that spent it, not the agent's first
                            yield dataclasses.replace(event, model=event.model or asked.model)
                            continue
                        if not answered:
                            answered = True
                            if failed:
                                yield ModelFallback(member.id, member.model, failed[0])
                        yield event
            except ProviderError as exc:
                last = index == len(self.members) - 1
                if answered or not exc.fallback:
                    raise
                first_error = first_error or exc
                failed.append(member.id)
                log.warning(
                    "provider_failed_over",
                    provider=member.id,
                    model=asked.model,
                    reason=exc.user_message,
                    next=None if last else self.members[index + 1].id,
                )
                if last:
                    raise first_error from exc
                continue
            return

    async def aclose(self) -> None:
        return None  # the members are closed by whoever built them (they are shared)
