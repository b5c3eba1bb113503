"""The API while the daemon stops: a request waiting for its answer, and one that comes
then, are answered 503 with Retry-After (an OpenAI client retries it by itself), not
left to the listener's forced stop (a bare 500)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar, cast

import anyio
import pytest

from thalos_bot.api.openai import RESTARTING, OpenAIApi, _restarting, _Turn
from thalos_bot.api.sink import ApiSink
from thalos_bot.channels import notices
from thalos_bot.channels.ports import InboundMessage, Notice, Sender
from thalos_bot.domain.ids import ChannelId
from thalos_bot.domain.security import SecurityContext

pytestmark = pytest.mark.anyio


async def test_a_waiting_request_hears_the_stop_and_new_ones_are_refused() -> None:
    sink = ApiSink()
    receive = await sink.claim("api:one")
    assert receive is not None
    sink.close()
    with anyio.fail_after(5):
        heard = await receive.receive()
    assert heard == Notice(notices.shutting_down(), "warning")
    assert sink.closed
    await sink.done("api:one", receive)
    receive.close()


def test_the_answer_says_come_back() -> None:
    answer = _restarting()
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert RESTARTING.encode() in answer.body


@dataclass
class StoppedPump:
    """An API whose messages the pump no longer reads (the daemon stops): none is
    ever handled."""

    sink: ApiSink
    channel_id: ChannelId = field(default_factory=lambda: ChannelId("web"))
    handed: list[str] = field(default_factory=list)

    def hand_over(self, message: InboundMessage) -> None:
        self.handed.append(message.text)  # dropped: the pump stopped reading


Answer = tuple[str, dict[str, int], str | None]
T = TypeVar("T")


async def whole(turn: _Turn) -> Answer:
    return await turn.whole()


async def streamed(turn: _Turn) -> list[str]:
    usage = False
    return [chunk async for chunk in turn.chunks(usage, [])]


async def stopped_while_waiting(
    sink: ApiSink, read: Callable[[_Turn], Awaitable[T]], *, new: bool, at: str
) -> tuple[T, StoppedPump]:
    """A request of ``api:one``, read by ``read``, whose pump stops once it handed
    ``at``: what it answers."""
    receive = await sink.claim("api:one")
    assert receive is not None
    api = StoppedPump(sink)
    sender = Sender(SecurityContext.of("owner"), "api", "k1")
    turn = _Turn(cast(OpenAIApi, api), "api:one", "k1", sender, "helper", "hi", new, receive)
    got: list[T] = []

    async def ask() -> None:
        got.append(await read(turn))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            while api.handed != [at]:
                await anyio.sleep(0.01)
            sink.close()
    receive.close()
    return got[0], api


async def test_a_new_sessions_command_that_is_never_handled_hears_the_stop() -> None:
    """A request naming a new session sends ``/new`` first and waits for it to be
    handled; once the pump stops reading it never is, and the stop's word ends the wait
    (before, the request hung until the listener's forced stop: a bare 500)."""
    got, api = await stopped_while_waiting(ApiSink(), whole, new=True, at="/new helper")
    assert got == ("", {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, RESTARTING)
    assert api.handed == ["/new helper"], "the message itself is not sent after the stop"


@dataclass
class Claims:
    """The shared store's claims (replicas), each release noted."""

    span: float = 30.0
    held: set[str] = field(default_factory=set)

    async def claim(self, conversation: str) -> int | None:
        if conversation in self.held:
            return None
        self.held.add(conversation)
        return 1

    async def renew(self, conversation: str, token: int) -> bool:
        return conversation in self.held

    async def release(self, conversation: str, token: int | None) -> None:
        self.held.discard(conversation)


async def test_a_request_whose_message_the_stop_dropped_lets_its_conversation_go() -> None:
    """The message was handed to a pump that stops (and drops it): the request hears the
    stop and is answered 503 at once, and its conversation is let go then, here and in
    the shared store, so the client's retry on another replica is not told the
    conversation is busy (before, the claim stayed until it ran out, 30 s)."""
    claims = Claims()
    got, api = await stopped_while_waiting(ApiSink(claims=claims), whole, new=False, at="hi")
    assert got[2] == RESTARTING
    assert claims.held == set(), "released in the shared store"
    elsewhere = ApiSink(claims=claims)  # the retry, on another replica
    again = await elsewhere.claim("api:one")
    assert again is not None
    await elsewhere.done("api:one", again)
    again.close()
    assert api.handed == ["hi"], "no /cancel into a pump that has stopped"


async def test_a_streamed_request_the_stop_ends_says_so_as_an_error_and_lets_go() -> None:
    """Its 200 was sent: the stop ends the stream with OpenAI's in-stream error (its
    clients raise it, and the request is made again), not a made-up answer, and its
    conversation is let go at once."""
    claims = Claims()
    chunks, _ = await stopped_while_waiting(ApiSink(claims=claims), streamed, new=False, at="hi")
    assert json.loads(chunks[-1].removeprefix("data: "))["error"]["code"] == "restarting"
    assert not any("[DONE]" in chunk for chunk in chunks)
    assert claims.held == set()
