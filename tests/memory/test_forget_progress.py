"""``memory forget --everywhere`` over a long history: it reports its progress (plain
lines through a pipe), goes a batch at a time, and when stopped keeps what it redacted
and leaves the memory archived, so running it again finishes the job."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.memory.conftest import T0
from thalos_bot.domain.messages import Message, message_to_json
from thalos_bot.memory.redact import BATCH, RedactionReport, redact_everywhere
from thalos_bot.memory.store import MemoryStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database, encode_time, fetch_all

FACT = "Alice's bike lock code is 5512"
SESSIONS = ("s1", "s2", "s3")
PER_SESSION = 400
"""1,200 messages: three batches of the redaction (500, 500, 200)."""
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


async def seed(db: Database) -> str:
    now = encode_time(T0)
    async with db.transaction() as conn:
        for session in SESSIONS:
            await conn.execute(
                "INSERT INTO sessions (id, agent_id, owner, status, created_at, updated_at)"
                " VALUES (?, 'assistant', 'alice', 'open', ?, ?)",
                (session, now, now),
            )
            for seq in range(PER_SESSION):
                said = f"Remember: {FACT}." if seq % 50 == 7 else f"Message {seq} about bikes."
                role = "user" if seq % 2 == 0 else "assistant"
                await conn.execute(
                    "INSERT INTO session_messages (session_id, seq, role, content)"
                    " VALUES (?, ?, ?, ?)",
                    (session, seq, role, message_to_json(_message(role, said))),
                )
        # s1's summary covers messages that hold the fact; s3's restates it.
        await conn.execute(
            "INSERT INTO session_context (session_id, summary, summary_until)"
            " VALUES ('s1', 'The user talked about bikes.', 300),"
            " ('s2', 'The user talked about bikes.', 0), ('s3', ?, 5)",
            (f"Summary: {FACT}.",),
        )
    stored = await MemoryStore(db).remember("alice", FACT)
    return stored.record.id


def _message(role: str, text: str) -> Message:
    return Message("user" if role == "user" else "assistant", Message.user(text).content)


async def holding_the_fact(db: Database) -> list[tuple[str, int]]:
    async with db.read() as conn:
        rows = await fetch_all(
            conn,
            "SELECT session_id, seq FROM session_messages WHERE content LIKE '%5512%'"
            " ORDER BY session_id, seq",
        )
    return [(str(r[0]), int(r[1])) for r in rows]


async def summaries(db: Database) -> dict[str, tuple[str, int]]:
    async with db.read() as conn:
        rows = await fetch_all(
            conn, "SELECT session_id, summary, summary_until FROM session_context"
        )
    return {str(r[0]): (str(r[1]), int(r[2])) for r in rows}


@pytest.mark.anyio
async def test_a_stopped_redaction_keeps_its_batches_and_a_second_run_finishes(
    tmp_path: Path,
) -> None:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        await seed(db)
        assert len(await holding_the_fact(db)) == 3 * 8
        heard: list[tuple[int, int]] = []
        async with anyio.create_task_group() as tasks:

            def stop_after_one_batch(done: int, total: int) -> None:
                heard.append((done, total))
                if done >= BATCH:
                    tasks.cancel_scope.cancel()

            tasks.start_soon(lambda: redact_everywhere(db, FACT, on_progress=stop_after_one_batch))
        assert heard == [(0, 1200), (500, 1200)]
        # The first batch (all of s1, and s2 up to seq 99) is redacted, with s1's summary.
        left = await holding_the_fact(db)
        assert left == [(s, seq) for s, seq in left if (s, seq) >= ("s2", 100)]
        assert len(left) == 24 - 8 - 2
        assert (await summaries(db))["s1"] == ("", 0)

        report = await redact_everywhere(db, FACT)
        assert report == RedactionReport(messages=14, sessions=2, summaries=1)
        assert await holding_the_fact(db) == []
        assert await summaries(db) == {
            "s1": ("", 0),
            "s2": ("The user talked about bikes.", 0),
            "s3": ("", 0),
        }


def test_forget_everywhere_shows_plain_progress_lines_when_piped(tmp_path: Path) -> None:
    config = tmp_path / "bot.toml"
    config.write_text('state_dir = "state"\n')
    path = tmp_path / "state" / "thalos.db"
    path.parent.mkdir()

    async def prepare() -> str:
        async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
            return await seed(db)

    record_id = anyio.run(prepare)
    env = {k: v for k, v in os.environ.items() if not k.startswith("THALOS_BOT")}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "thalos_bot.cli.main", "memory", "forget", record_id),
            *("--everywhere", "--yes", "-c", str(config)),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "memory forget: 500/1,200",
        "memory forget: 1,000/1,200",
        "memory forget: 1,200/1,200",
    ]
    assert ", done in " in lines[-1]
    assert not CONTROL.search(done.stderr), repr(done.stderr)
    assert done.stdout.splitlines() == [
        f"deleted {record_id}: the record, its index entries and its stored bytes",
        (
            "redacted 24 stored message(s) in 3 session(s); reset 2 compaction summary(ies)"
            " for regeneration"
        ),
    ]

    async def after() -> list[tuple[str, int]]:
        async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
            assert await MemoryStore(db).get(record_id) is None
            return await holding_the_fact(db)

    assert anyio.run(after) == []
