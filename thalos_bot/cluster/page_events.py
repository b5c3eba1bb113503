"""A web page's events shared by replicas: every event of a conversation is numbered
in the shared store (``web_events``, a sequence per conversation kept in
``web_streams``), so a browser connected to any replica sees the answer of a turn that
runs on another, and the id it last saw means the same event on every replica.

The number is taken under the conversation's row lock in ``web_streams`` and held until
the event's row commits, so the rows of one conversation commit in their order: a
replica reading "after n" never skips one committed later with a smaller number. A
final deletes its turn's partials (the final replaces them); older rows beyond a bound
are deleted (a page that asks for them starts afresh from what is kept).

A final sent through the delivery engine carries its outbox row's key, and the store
keeps one final per conversation and key (``web_finals``, a day long, apart from the
events so a bound on those does not forget it): a replica that stalled (SIGSTOP) with a
final queued, and wakes after another took the row over and wrote it, writes nothing.

Each write NOTIFYs :data:`CHANNEL` with the conversation's name, in its transaction, so
the replicas listening (:meth:`PgPageEvents.listen`) read it as soon as it commits.

A tool's image or voice clip is stored too (``web_media``, the most recent few per
conversation), so any replica serves it. (An approval's answer given on a replica that
did not ask is relayed as every channel's is: :mod:`thalos_bot.service.press_relay`.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from thalos_bot.storage.pg.database import (
    Connection,
    PgDatabase,
    fetch_all,
    fetch_one,
)
from thalos_bot.storage.pg.listener import listen_for_ever
from thalos_bot.storage.web_events import PageEvent

log = structlog.get_logger(__name__)

CHANNEL = "web_events"
"""The NOTIFY channel of the pages' events; its payload, a conversation."""


class _RefusedError(Exception):
    """A final whose key the conversation has already: its transaction is undone."""

    def __init__(self, seq: int) -> None:
        self.seq = seq


class PgPageEvents:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def started(self) -> None:
        """Nothing to forget: another replica may be writing an answer."""

    async def append(
        self, conversation: str, kind: str, data: Mapping[str, Any], turn: str | None, keep: int
    ) -> int:
        """Store an event; its number. At most about ``keep`` rows of the conversation
        are kept. A final with a ``key`` the conversation has already is not stored: the
        number is the one stored first."""
        key = data.get("key") if kind == "final" else None
        try:
            async with self._db.transaction() as conn:
                row = await fetch_one(
                    conn,
                    "INSERT INTO web_streams AS s (conversation, last_seq) VALUES (%s, 1)"
                    " ON CONFLICT (conversation) DO UPDATE SET last_seq = s.last_seq + 1"
                    " RETURNING last_seq",
                    (conversation,),
                )
                assert row is not None
                seq = int(row["last_seq"])
                if isinstance(key, str):
                    await self._first_final(conn, conversation, key, seq)
                if kind == "final" and turn is not None:
                    await conn.execute(
                        "DELETE FROM web_events WHERE conversation = %s AND turn = %s"
                        " AND kind = 'partial'",
                        (conversation, turn),
                    )
                await conn.execute(
                    "INSERT INTO web_events (conversation, seq, kind, turn, data)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (conversation, seq, kind, turn, json.dumps(dict(data))),
                )
                await conn.execute(
                    "DELETE FROM web_events WHERE conversation = %s AND seq <= %s",
                    (conversation, seq - keep),
                )
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, conversation))
        except _RefusedError as refused:
            log.info("web_final_refused", seq=refused.seq)
            return refused.seq
        return seq

    async def _first_final(self, conn: Connection, conversation: str, key: str, seq: int) -> None:
        """Note the final ``key`` of ``conversation`` as event ``seq``; raises
        :class:`_RefusedError` when it is noted already (the conversation's row in
        ``web_streams`` is locked: no other final of it is noted meanwhile)."""
        await conn.execute("DELETE FROM web_finals WHERE written_at < now() - interval '1 day'")
        row = await fetch_one(
            conn,
            "INSERT INTO web_finals (conversation, key, seq) VALUES (%s, %s, %s)"
            " ON CONFLICT (conversation, key) DO NOTHING RETURNING seq",
            (conversation, key, seq),
        )
        if row is None:
            first = await fetch_one(
                conn,
                "SELECT seq FROM web_finals WHERE conversation = %s AND key = %s",
                (conversation, key),
            )
            raise _RefusedError(0 if first is None else int(first["seq"]))

    async def listen(self, heard: Callable[[str | None], None]) -> None:
        """Call ``heard`` with the conversation of each event written, as it commits
        (its NOTIFY), for ever; with None each time listening again (what was written
        meanwhile was not heard). A failed connection is made again
        (:func:`~thalos_bot.storage.pg.listener.listen_for_ever`)."""

        async def again() -> None:
            heard(None)

        await listen_for_ever(
            self._db.conninfo,
            [CHANNEL],
            lambda _channel, payload: heard(payload),
            unheard="web_events_unheard",
            again=again,
        )

    async def after(self, marks: Mapping[str, int]) -> list[PageEvent]:
        """The events of each conversation of ``marks`` after its number, in order."""
        if not marks:
            return []
        names = list(marks)
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT e.conversation, e.seq, e.kind, e.turn, e.data FROM web_events e"
                " JOIN unnest(%s::text[], %s::bigint[]) AS w(conversation, seq)"
                " ON e.conversation = w.conversation AND e.seq > w.seq"
                " ORDER BY e.conversation, e.seq",
                (names, [marks[n] for n in names]),
            )
        return [
            PageEvent(
                str(r["conversation"]),
                int(r["seq"]),
                str(r["kind"]),
                dict(r["data"]),
                None if r["turn"] is None else str(r["turn"]),
            )
            for r in rows
        ]

    async def keep_media(
        self, conversation: str, key: str, media_type: str, data: bytes, keep: int
    ) -> None:
        """Store a file a page shows; only the ``keep`` most recent of the conversation
        are kept."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO web_media (key, conversation, media_type, data)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                (key, conversation, media_type, data),
            )
            await conn.execute(
                "DELETE FROM web_media WHERE conversation = %s AND key NOT IN"
                " (SELECT key FROM web_media WHERE conversation = %s"
                " ORDER BY made_at DESC, key LIMIT %s)",
                (conversation, conversation, keep),
            )

    async def media(self, conversation: str, key: str) -> tuple[str, bytes] | None:
        """A stored file of ``conversation`` (never another's)."""
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT media_type, data FROM web_media WHERE key = %s AND conversation = %s",
                (key, conversation),
            )
        return None if row is None else (str(row["media_type"]), bytes(row["data"]))
