"""Forgetting everywhere: a fact remembered in conversation, talked about and folded into
a compaction summary, then ``thalos-bot memory forget ID --everywhere``. Afterwards no
request sent to the model carries it, and neither does the database file, byte for byte.

Real runtime, the official SDK over a socket to the Anthropic fake, the embedded
embedder (so a vector existed too), a small context window so the talk gets compacted,
and the operator's command run as a process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import (
    AnthropicFake,
    FakeUsage,
    RecordedRequest,
    Reply,
    text_reply,
    tool_use_reply,
)
from tests.memory.conftest import ALICE
from thalos_bot.config.memory import MemorySettings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition, MemoryPolicy
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.memory.assembly import build_memory
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.runtime.compaction import SUMMARY_INSTRUCTIONS, CompactionPolicy
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.catalog import SourceCatalog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FACT = "Alice's gym locker code is 4471-ZEBRA"
SECRET_WORDS = (rb"(?<![0-9])4471(?![0-9])", rb"zebra", rb"ZEBRA")
"""The code's digits as a number of their own (a stored time's microseconds such as
``.344712`` hold them by chance), and its word."""
ANSWER = "Here is a long answer about training plans. " + "Warm up, then intervals. " * 60
AGENT = AgentDefinition(
    AgentId("assistant"),
    "Assistant",
    "",
    "You are a helpful assistant.",
    tools=("memory__*",),
    memory=MemoryPolicy(enabled=True, top_k=5, char_budget=2000),
)


def is_summary(request: RecordedRequest) -> bool:
    system = request.body.get("system") or []
    return any(SUMMARY_INSTRUCTIONS in block.get("text", "") for block in system)


def size(request: RecordedRequest) -> int:
    sent = {k: request.body.get(k) for k in ("system", "tools", "messages")}
    return len(json.dumps(sent)) // 4


def answering(request: RecordedRequest) -> Reply:
    if is_summary(request):
        # A summary restates the fact when, and only when, what it summarizes holds it.
        heard = "4471-ZEBRA" in json.dumps(request.body["messages"])
        return text_reply("The user talked about training." + (f" {FACT}." if heard else ""))
    return text_reply(ANSWER, usage=FakeUsage(input_tokens=size(request), output_tokens=400))


@asynccontextmanager
async def daemon(path: Path, fake: AnthropicFake) -> AsyncIterator[Runtime]:
    db = await Database.open(path, migrations=ALL_MIGRATIONS)
    provider = AnthropicProvider(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0)
    try:
        memory = build_memory(db, MemorySettings())
        async with (
            memory.maintained(),
            Runtime(
                catalog=AgentCatalog([AGENT]),
                store=SqliteSessionStore(db),
                provider=provider,
                settings=RuntimeSettings(
                    model="claude-test",
                    max_output_tokens=800,
                    context_window=3000,
                    compaction=CompactionPolicy(
                        threshold=0.6, keep_recent_turns=2, summary_max_tokens=256
                    ),
                ),
                tools=SourceCatalog([memory.source]),
                contributors=[memory.contributor],
            ) as runtime,
        ):
            yield runtime
    finally:
        await provider.aclose()
        await db.aclose()


def forget(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THALOS_BOT")}
    return subprocess.run(
        [sys.executable, "-m", "thalos_bot.cli.cmd_memory", "memory", *args, "-c", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def stored_bytes(path: Path) -> bytes:
    files = [path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))]
    return b"".join(f.read_bytes() for f in files if f.exists())


async def test_a_fact_forgotten_everywhere_is_in_no_request_and_no_byte(tmp_path: Path) -> None:
    config = tmp_path / "bot.toml"
    config.write_text('state_dir = "state"\n')
    path = tmp_path / "state" / "thalos.db"
    path.parent.mkdir()
    with AnthropicFake() as fake:
        fake.enqueue(tool_use_reply("memory__remember", {"text": FACT, "kind": "fact"}))
        fake.enqueue(text_reply(f"Noted: {FACT}."))
        for _ in range(8):
            fake.enqueue(answering)
        async with daemon(path, fake) as runtime:
            session = await runtime.create_session("assistant", ALICE)
            said = "Please remember: my gym locker code is 4471-ZEBRA."
            assert (await runtime.run_turn(TurnRequest(session.id, ALICE, said))).ok
            for n in range(5):
                ask = f"Question {n}: what should my training week look like?"
                assert (await runtime.run_turn(TurnRequest(session.id, ALICE, ask))).ok
        summaries = [r for r in fake.requests if is_summary(r)]
        assert summaries, "the talk was compacted"
        assert "4471-ZEBRA" in json.dumps(fake.requests[-1].body), "the summary carries it"
        sent_before = len(fake.requests)
        assert b"4471-ZEBRA" in stored_bytes(path), "the check below can fail"

        exported = forget(config, "export")
        (record,) = [json.loads(line) for line in exported.stdout.splitlines()]
        done = forget(config, "forget", record["id"], "--everywhere", "--yes")
        assert done.returncode == 0, done.stderr
        assert f"deleted {record['id']}" in done.stdout
        assert "redacted 3 stored message(s) in 1 session(s)" in done.stdout
        assert "reset 1 compaction summary" in done.stdout

        for word in SECRET_WORDS:
            assert re.search(word, stored_bytes(path)) is None, word

        fake.enqueue(answering)
        fake.enqueue(answering)
        async with daemon(path, fake) as runtime:
            again = "What was my locker code again?"
            assert (await runtime.run_turn(TurnRequest(SessionId(session.id), ALICE, again))).ok
        after = fake.requests[sent_before:]
        assert after
        for request in after:
            body = json.dumps(request.body)
            assert "4471" not in body, body[
                max(0, body.find("4471") - 300) : body.find("4471") + 100
            ]
            assert "zebra" not in body.lower()
    for word in SECRET_WORDS:
        assert re.search(word, stored_bytes(path)) is None, word
