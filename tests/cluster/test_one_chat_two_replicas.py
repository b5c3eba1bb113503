"""Two updates of one chat delivered to two different replicas (real ``thalos-bot run``
daemons on one PostgreSQL, the Anthropic fake as the model): their turns never
overlap, and the history follows ``update_id``.

The proof of "never overlap" needs no clock: every turn's request to the model is
recorded by the fake, and each one must carry the previous turn's answer. A turn that
started while another of the chat was still running could not (that answer was not
committed yet). A message that arrives while a turn runs gets the busy notice, as with
one process, wherever it was delivered."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import invariants
from tests.cluster.daemons import ALLOWED, Daemons, running_daemons
from tests.daemon_config import anthropic_provider
from tests.fakes.anthropic_api import AnthropicFake, RecordedRequest, StreamReply, text_reply
from tests.fakes.telegram_api import TelegramFake
from thalos_bot.channels import notices

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
LEASE = 3.0
CHAT = ALLOWED[2]
LONG = "first " + " ".join(f"w{i}" for i in range(40))


def echo(request: RecordedRequest) -> StreamReply:
    """The last user text back, a word each 50 ms (the long one streams for 2 s)."""
    words = ("You said: " + request.last_user_text).split(" ")
    return text_reply(*(w if i == 0 else " " + w for i, w in enumerate(words)), chunk_delay=0.05)


@pytest.fixture
def claude() -> Iterator[AnthropicFake]:
    with AnthropicFake() as fake:
        fake.enqueue(*[echo] * 3)
        yield fake


@pytest.fixture
async def daemons(
    fake: TelegramFake, claude: AnthropicFake, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Daemons]:
    async with running_daemons(
        fake,
        postgres_url,
        tmp_path,
        lease=LEASE,
        provider=anthropic_provider(claude.base_url),
        env={"ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret"},
    ) as made:
        yield made


def _texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def conversation(request: RecordedRequest) -> list[tuple[str, str]]:
    body = request.body if isinstance(request.body, dict) else {}
    return [(str(m.get("role")), _texts(m)) for m in body.get("messages", [])]


async def deliver_at(d: Daemons, replica: int, text: str) -> int:
    """``text`` from the chat, delivered to that replica (not through HAProxy)."""
    d.fake.webhooks.route(f"http://127.0.0.1:{d.replicas[replica].port}")
    update = d.fake.push_text(CHAT, CHAT, text)
    await d.fake.wait_for(lambda: d.fake.webhooks.answered(update) == [200], 20)
    return update


async def test_two_replicas_take_one_chat_in_turn_and_in_update_order(
    daemons: Daemons, claude: AnthropicFake
) -> None:
    d = daemons
    await deliver_at(d, 0, LONG)
    await d.fake.wait_for(lambda: any(t.startswith("You said: first") for t in d.fake.texts(CHAT)))
    await deliver_at(d, 1, "second")  # while the first runs, at another replica
    await d.fake.wait_for(lambda: notices.busy() in d.fake.texts(CHAT), 20)
    await d.fake.wait_for(lambda: invariants.shown_once(d.fake, CHAT, LONG), 30)
    await deliver_at(d, 1, "third")
    await d.fake.wait_for(lambda: invariants.shown_once(d.fake, CHAT, "third"), 30)
    await deliver_at(d, 2, "fourth")
    await d.fake.wait_for(lambda: invariants.shown_once(d.fake, CHAT, "fourth"), 30)

    turns = [conversation(r) for r in claude.requests]
    assert len(turns) == 3, "one model request per turn: the busy message ran none"
    for before, after in pairwise(turns):
        answer = ("assistant", "You said: " + before[-1][1])
        assert after[: len(before) + 1] == [*before, answer], (
            "a turn started before the previous one had committed its answer"
        )
    assert [t for role, t in turns[-1] if role == "user"] == [LONG, "third", "fourth"]
    assert d.fake.texts(CHAT).count(notices.busy()) == 1
    assert invariants.ANSWER + "second" not in invariants.finals(d.fake, CHAT)
    invariants.check(d.fake, d.url, {CHAT: [LONG, "third", "fourth"]})
