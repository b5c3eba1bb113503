"""Forgetting everywhere: the remembered text out of stored session history, and the
compaction summaries that may have carried it reset.

A memory usually came from a conversation, and a compaction summary may restate it.
:func:`redact_everywhere` replaces every span of the remembered text in every stored
message (any string in it: text, tool inputs, tool results) with ``[forgotten]``; a
span matches case-insensitively, with any run of whitespace between its words. A
sentence that restates the memory in other words ("my locker code is 4471" for the
memory "Alice's locker code is 4471") goes too: it is judged by the same resemblance
measure as dedupe (see :func:`~thalos_bot.memory.text.resemblance`). A
session whose summary contains the text, or was built over a redacted turn, gets its
summary cleared and its boundary reset to the start, so the next turn re-summarizes
from the redacted history (if it still needs to) instead of sending the old summary.

The work runs under ``secure_delete`` and ends with a ``TRUNCATE`` checkpoint, so the
old bytes are zeroed in the database file and gone from the WAL. It goes through the
stored messages in batches of :data:`BATCH`, each its own transaction together with
the reset of the summaries it covers, so a long run holds the write lock a batch at a
time, reports its progress (``on_progress(scanned, total)``), and, when stopped, keeps
what it redacted: running it again finishes the job (what is redacted no longer
matches).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiosqlite
import structlog

from thalos_bot.config.memory import CONTAINMENT_THRESHOLD, DEDUPE_THRESHOLD
from thalos_bot.domain.messages import message_from_json
from thalos_bot.memory.text import resemblance
from thalos_bot.storage.database import Database, fetch_all, fetch_one

log = structlog.get_logger(__name__)

FORGOTTEN = "[forgotten]"
BATCH = 500


@dataclass(frozen=True, slots=True)
class RedactionReport:
    messages: int
    """Stored messages rewritten."""
    sessions: int
    """Sessions those messages belong to."""
    summaries: int
    """Compaction summaries cleared for regeneration."""


_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")


@dataclass(frozen=True, slots=True)
class Forgetting:
    """What to take out: the exact text, and sentences that restate it."""

    text: str
    pattern: re.Pattern[str]

    @classmethod
    def of(cls, text: str) -> Forgetting | None:
        words = text.split()
        if not words:
            return None
        return cls(text, re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE))

    def restates(self, sentence: str) -> bool:
        return resemblance(sentence, self.text).is_duplicate(
            DEDUPE_THRESHOLD, CONTAINMENT_THRESHOLD
        )

    def redact(self, value: str) -> str:
        value = self.pattern.sub(FORGOTTEN, value)
        return _SENTENCE.sub(
            lambda m: _keep_space(m.group(0)) if self.restates(m.group(0)) else m.group(0),
            value,
        )

    def found_in(self, value: str) -> bool:
        return self.redact(value) != value


def _keep_space(sentence: str) -> str:
    lead = sentence[: len(sentence) - len(sentence.lstrip())]
    return lead + FORGOTTEN


def _redact(value: Any, forgetting: Forgetting) -> Any:
    if isinstance(value, str):
        return forgetting.redact(value)
    if isinstance(value, list):
        return [_redact(v, forgetting) for v in value]
    if isinstance(value, dict):
        return {k: _redact(v, forgetting) for k, v in value.items()}
    return value


def redact_content(content: str, forgetting: Forgetting) -> str | None:
    """The stored message JSON with every span replaced, or ``None`` if none matched."""
    redacted = _redact(json.loads(content), forgetting)
    encoded = json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))
    if encoded == content:
        return None
    message_from_json(encoded)  # still a valid message
    return encoded


@dataclass(frozen=True, slots=True)
class SessionTables:
    """An engine's session tables as forgetting everywhere reaches them: both engines'
    connections run ``execute(sql, params)``, and their rows are read by column name;
    only the placeholder (``mark``) and the transactions differ."""

    write: Callable[[], AbstractAsyncContextManager[Any]]
    """One write transaction (SQLite's under ``secure_delete``)."""
    read: Callable[[], AbstractAsyncContextManager[Any]]
    fetch_one: Callable[[Any, str, Sequence[Any]], Awaitable[Any]]
    fetch_all: Callable[[Any, str, Sequence[Any]], Awaitable[Sequence[Any]]]
    mark: str

    def sql(self, statement: str) -> str:
        return statement.replace("?", self.mark)


@asynccontextmanager
async def _securely(db: Database) -> AsyncIterator[aiosqlite.Connection]:
    """A write transaction under ``secure_delete`` (on from the database's open; said
    here too, as this relies on it)."""
    async with db.transaction() as conn:
        previous = await fetch_one(conn, "PRAGMA secure_delete")
        await conn.execute("PRAGMA secure_delete = ON")
        try:
            yield conn
        finally:
            if previous is not None and not previous[0]:
                await conn.execute("PRAGMA secure_delete = OFF")


def sqlite_tables(db: Database) -> SessionTables:
    return SessionTables(lambda: _securely(db), db.read, fetch_one, fetch_all, "?")


async def redact_everywhere(
    db: Database | SessionTables,
    text: str,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> RedactionReport:
    """Redact ``text`` from every stored message and reset the summaries it reached.
    ``on_progress`` hears ``(messages scanned, messages stored)`` after each batch."""
    tables = db if isinstance(db, SessionTables) else sqlite_tables(db)
    forgetting = Forgetting.of(text)
    if forgetting is None:
        return RedactionReport(0, 0, 0)
    async with tables.read() as conn:
        row = await tables.fetch_one(conn, "SELECT count(*) AS n FROM session_messages", ())
    total = int(row["n"]) if row is not None else 0
    if on_progress is not None:
        on_progress(0, total)
    sessions: set[str] = set()
    rewritten = summaries = scanned = 0
    after: tuple[str, int] = ("", -1)
    while True:
        async with tables.write() as conn:
            rows = await tables.fetch_all(
                conn,
                tables.sql(
                    "SELECT session_id, seq, content FROM session_messages"
                    " WHERE (session_id, seq) > (?, ?) ORDER BY session_id, seq LIMIT ?"
                ),
                (*after, BATCH),
            )
            touched: dict[str, int] = {}
            for row in rows:
                new = redact_content(str(row["content"]), forgetting)
                if new is None:
                    continue
                session, seq = str(row["session_id"]), int(row["seq"])
                await conn.execute(
                    tables.sql(
                        "UPDATE session_messages SET content = ? WHERE session_id = ? AND seq = ?"
                    ),
                    (new, session, seq),
                )
                rewritten += 1
                touched[session] = min(touched.get(session, seq), seq)
            summaries += await _reset_covered(tables, conn, touched)
        sessions |= touched.keys()
        scanned += len(rows)
        if on_progress is not None:
            on_progress(scanned, max(total, scanned))
        if len(rows) < BATCH:
            break
        after = (str(rows[-1]["session_id"]), int(rows[-1]["seq"]))
    async with tables.write() as conn:
        summaries += await _reset_containing(tables, conn, forgetting)
    report = RedactionReport(rewritten, len(sessions), summaries)
    log.info(
        "memory-redacted",
        messages=report.messages,
        sessions=report.sessions,
        summaries=report.summaries,
    )
    return report


async def _reset(tables: SessionTables, conn: Any, session: str) -> None:
    await conn.execute(
        tables.sql(
            "UPDATE session_context SET summary = '', summary_until = 0 WHERE session_id = ?"
        ),
        (session,),
    )


async def _reset_covered(tables: SessionTables, conn: Any, touched: dict[str, int]) -> int:
    """Reset the summaries built over a redacted message (``touched``: session → the
    first redacted seq)."""
    reset = 0
    for session, first in touched.items():
        row = await tables.fetch_one(
            conn,
            tables.sql("SELECT summary_until FROM session_context WHERE session_id = ?"),
            (session,),
        )
        if row is not None and first < int(row["summary_until"]):
            await _reset(tables, conn, session)
            reset += 1
    return reset


async def _reset_containing(tables: SessionTables, conn: Any, forgetting: Forgetting) -> int:
    """Reset the summaries that restate the text themselves."""
    rows = await tables.fetch_all(
        conn, "SELECT session_id, summary FROM session_context WHERE summary <> ''", ()
    )
    reset = 0
    for row in rows:
        if forgetting.found_in(str(row["summary"])):
            await _reset(tables, conn, str(row["session_id"]))
            reset += 1
    return reset
