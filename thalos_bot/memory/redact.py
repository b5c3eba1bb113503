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
old bytes are zeroed in the database file and gone from the WAL.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import aiosqlite
import structlog

from thalos_bot.domain.messages import message_from_json
from thalos_bot.memory.text import CONTAINMENT_THRESHOLD, DEDUPE_THRESHOLD, resemblance
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


async def redact_everywhere(db: Database, text: str) -> RedactionReport:
    forgetting = Forgetting.of(text)
    if forgetting is None:
        return RedactionReport(0, 0, 0)
    touched: dict[str, int] = {}
    rewritten = 0
    async with db.transaction() as conn:
        previous = await fetch_one(conn, "PRAGMA secure_delete")
        await conn.execute("PRAGMA secure_delete = ON")
        try:
            after: tuple[str, int] = ("", -1)
            while True:
                rows = await fetch_all(
                    conn,
                    "SELECT session_id, seq, content FROM session_messages"
                    " WHERE (session_id, seq) > (?, ?) ORDER BY session_id, seq LIMIT ?",
                    (*after, BATCH),
                )
                for row in rows:
                    new = redact_content(str(row["content"]), forgetting)
                    if new is None:
                        continue
                    session, seq = str(row["session_id"]), int(row["seq"])
                    await conn.execute(
                        "UPDATE session_messages SET content = ? WHERE session_id = ? AND seq = ?",
                        (new, session, seq),
                    )
                    rewritten += 1
                    touched[session] = min(touched.get(session, seq), seq)
                if len(rows) < BATCH:
                    break
                after = (str(rows[-1]["session_id"]), int(rows[-1]["seq"]))
            summaries = await _reset_summaries(conn, forgetting, touched)
        finally:
            if previous is not None and not previous[0]:
                await conn.execute("PRAGMA secure_delete = OFF")
    report = RedactionReport(rewritten, len(touched), summaries)
    log.info(
        "memory-redacted",
        messages=report.messages,
        sessions=report.sessions,
        summaries=report.summaries,
    )
    return report


async def _reset_summaries(
    conn: aiosqlite.Connection, forgetting: Forgetting, touched: dict[str, int]
) -> int:
    rows = await fetch_all(
        conn,
        "SELECT session_id, summary, summary_until FROM session_context"
        " WHERE summary <> '' OR summary_until > 0",
    )
    reset = 0
    for row in rows:
        session = str(row["session_id"])
        covered = session in touched and touched[session] < int(row["summary_until"])
        if covered or forgetting.found_in(str(row["summary"])):
            await conn.execute(
                "UPDATE session_context SET summary = '', summary_until = 0 WHERE session_id = ?",
                (session,),
            )
            reset += 1
    return reset
