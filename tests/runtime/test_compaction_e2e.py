"""Compaction end to end: the runtime, the real anthropic SDK, the local fake, SQLite.

A small context window makes a few long answers fill it. The fake reports the prompt
size the way the real API does (from what was sent), so the budget runs on reported
numbers, not only on our estimate.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_api import (
    AnthropicFake,
    FakeUsage,
    RecordedRequest,
    Reply,
    overloaded,
    text_reply,
)
from tests.runtime.conftest import ALICE, make_catalog
from thalos_bot.domain.events import Info, TextDelta, TurnCompleted
from thalos_bot.domain.ids import SessionId
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.runtime.compaction import SUMMARY_INSTRUCTIONS, SUMMARY_PREFIX, CompactionPolicy
from thalos_bot.runtime.protocol import TurnRequest, TurnResult
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore

pytestmark = pytest.mark.anyio

WINDOW = 6000
ANSWER = "The answer, at length: " + "lorem ipsum dolor sit amet " * 90  # ~600 tokens
SUMMARY = "SUMMARY-ONE: the person asked eight numbered questions about lorem ipsum."


@pytest.fixture
def fake() -> Iterator[AnthropicFake]:
    with AnthropicFake() as server:
        yield server


def is_summary_request(request: RecordedRequest) -> bool:
    system = request.body.get("system") or []
    return any(SUMMARY_INSTRUCTIONS in block.get("text", "") for block in system)


def prompt_tokens(request: RecordedRequest) -> int:
    """What the real API would report, roughly: the size of what was sent."""
    sent = {k: request.body.get(k) for k in ("system", "tools", "messages")}
    return len(json.dumps(sent)) // 4


def answering(summary: Callable[[RecordedRequest], Reply]) -> Callable[[RecordedRequest], Reply]:
    def reply(request: RecordedRequest) -> Reply:
        if is_summary_request(request):
            return summary(request)
        usage = FakeUsage(input_tokens=prompt_tokens(request), output_tokens=600)
        return text_reply(ANSWER, usage=usage)

    return reply


def summarize(request: RecordedRequest) -> Reply:
    return text_reply(SUMMARY, usage=FakeUsage(input_tokens=prompt_tokens(request)))


def main_requests(fake: AnthropicFake) -> list[RecordedRequest]:
    return [r for r in fake.requests if not is_summary_request(r)]


def assert_acceptable(body: dict[str, Any]) -> None:
    """The shape rules of the Messages API that compaction could break."""
    messages = body["messages"]
    assert messages[0]["role"] == "user"
    for previous, current in itertools.pairwise(messages):
        assert previous["role"] != current["role"]
    for message in messages:
        assert message["content"], "no message is empty"
        for block in message["content"]:
            if block["type"] == "text":
                assert block["text"].strip(), "no text block is whitespace-only"
    blocks = [*(body.get("system") or []), *(body.get("tools") or [])]
    blocks += [b for m in messages for b in m["content"]]
    assert sum(1 for b in blocks if "cache_control" in b) <= 4


@asynccontextmanager
async def runtime_on(
    fake: AnthropicFake, path: Path, policy: CompactionPolicy | None = None
) -> AsyncIterator[Runtime]:
    provider = AnthropicProvider(api_key="sk-test-1", base_url=fake.base_url, max_retries=0)
    settings = RuntimeSettings(
        model="claude-test",
        max_output_tokens=800,
        context_window=WINDOW,
        compaction=policy
        or CompactionPolicy(threshold=0.6, keep_recent_turns=2, summary_max_tokens=256),
    )
    async with await Database.open(path) as db:
        store = SqliteSessionStore(db)
        try:
            async with Runtime(
                catalog=make_catalog(), store=store, provider=provider, settings=settings
            ) as runtime:
                yield runtime
        finally:
            await provider.aclose()


async def ask(runtime: Runtime, session: SessionId, text: str) -> TurnResult:
    result = await runtime.run_turn(TurnRequest(session, ALICE, text))
    assert result.ok, result.terminal
    return result


def infos(result: TurnResult, name: str) -> list[Info]:
    return [e for e in result.events if isinstance(e, Info) and e.name == name]


async def test_a_long_conversation_is_summarized_once_and_the_summary_survives_a_restart(
    fake: AnthropicFake, tmp_path: Path
) -> None:
    path = tmp_path / "bot.db"
    fake.enqueue(*[answering(summarize)] * 16)
    results: list[TurnResult] = []
    async with runtime_on(fake, path) as runtime:
        session = (await runtime.create_session("helper", ALICE)).id
        for index in range(12):
            results.append(await ask(runtime, session, f"question {index}"))
            if any(is_summary_request(r) for r in fake.requests):
                break
        before_summary = main_requests(fake)[-2]
        status = await runtime.session_info(session)
    requests = fake.requests
    summaries = [i for i, r in enumerate(requests) if is_summary_request(r)]
    assert len(summaries) == 1, "the history filled the window, so it was summarized"
    summary_request = requests[summaries[0]]
    sent = requests[summaries[0] + 1]
    assert "question 0" in summary_request.body["messages"][0]["content"][0]["text"]
    assert "tools" not in summary_request.body
    first = sent.body["messages"][0]["content"]
    assert first[0]["text"].startswith(SUMMARY_PREFIX)
    assert SUMMARY in first[0]["text"]
    assert prompt_tokens(sent) < prompt_tokens(before_summary), "the next request is smaller"
    assert sent.last_user_text.endswith(f"question {len(results) - 1}")
    for request in main_requests(fake):
        assert_acceptable(request.body)
    last = results[-1]
    assert isinstance(last.terminal, TurnCompleted)
    assert SUMMARY not in last.terminal.text, "the summary is not shown to the user"
    assert all(SUMMARY not in e.text for e in last.events if isinstance(e, TextDelta))
    assert infos(last, "context-compacted")
    assert not infos(last, "context-dropped")
    assert status is not None
    assert 0 < status.context_tokens < WINDOW * 0.6

    # A restart from the same database reuses the stored summary: no second summary call.
    seen = len(fake.requests)
    async with runtime_on(fake, path) as runtime:
        after_restart = await ask(runtime, session, "and one more question")
        full = await runtime.store.history(session)
    new = fake.requests[seen:]
    assert [is_summary_request(r) for r in new] == [False]
    assert new[0].body["messages"][0]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    assert SUMMARY in new[0].body["messages"][0]["content"][0]["text"]
    assert "question 0" not in json.dumps(new[0].body["messages"])
    assert_acceptable(new[0].body)
    assert not infos(after_restart, "context-compacted")
    assert full[0].text == "question 0", "the full history stays stored"


async def test_when_the_summary_fails_the_oldest_turns_are_dropped_and_the_user_told_once(
    fake: AnthropicFake, tmp_path: Path
) -> None:
    fake.enqueue(*[answering(lambda _request: overloaded())] * 16)
    async with runtime_on(fake, tmp_path / "bot.db") as runtime:
        session = (await runtime.create_session("helper", ALICE)).id
        results = [await ask(runtime, session, f"question {index}") for index in range(12)]
    told = [len(infos(r, "context-dropped")) for r in results]
    assert sum(told) >= 1, "the window filled up and the summary failed"
    assert all(count <= 1 for count in told), "told once per drop"
    assert not any(infos(r, "context-compacted") for r in results)
    dropped_at = told.index(1)
    sent = main_requests(fake)[dropped_at]
    assert_acceptable(sent.body)
    assert "question 0" not in json.dumps(sent.body["messages"]), "the oldest turn went"
    assert sent.last_user_text == f"question {dropped_at}", "the current turn stays"
    assert not sent.body["messages"][0]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    for request in main_requests(fake):
        assert_acceptable(request.body)


async def test_the_budget_follows_the_prompt_size_the_api_reports(
    fake: AnthropicFake, tmp_path: Path
) -> None:
    """Our character estimate says these requests are small; the API says they are ten
    times bigger (say, a language that tokenizes badly). The API is believed."""

    def reply(request: RecordedRequest) -> Reply:
        if is_summary_request(request):
            return summarize(request)
        usage = FakeUsage(input_tokens=prompt_tokens(request) * 10)
        return text_reply("A short answer. " * 25, usage=usage)

    fake.enqueue(*[reply] * 12)
    async with runtime_on(fake, tmp_path / "bot.db") as runtime:
        session = (await runtime.create_session("helper", ALICE)).id
        for index in range(10):
            await ask(runtime, session, f"question {index}")
            if any(is_summary_request(r) for r in fake.requests):
                break
    summaries = [i for i, r in enumerate(fake.requests) if is_summary_request(r)]
    assert summaries, "the reported size passed the threshold"
    previous = fake.requests[summaries[0] - 1]
    assert prompt_tokens(previous) * 2 < WINDOW * 0.6, "our own estimate alone was far below"
