"""What the tests of turns run by any replica read: which replica ran each turn (its log's
``connection_turn_taken`` lines), and who holds a conversation's lease."""

from __future__ import annotations

import json
from collections import Counter

import anyio
import anyio.to_thread
import psycopg

from tests.cluster.processes import Replica


def taken(replica: Replica) -> list[tuple[str, int]]:
    """(conversation, seq) of each inbox row ``replica`` took and handed to its pump."""
    found: list[tuple[str, int]] = []
    for line in replica.log.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"connection_turn_taken"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        found.append((str(record["conversation"]), int(record["seq"])))
    return found


def runners(replicas: list[Replica]) -> dict[int, set[str]]:
    """pid → the conversations whose rows it took."""
    return {r.pid: {conversation for conversation, _ in taken(r)} for r in replicas}


def takes(replicas: list[Replica]) -> Counter[int]:
    """How often each inbox row was taken, over all the replicas."""
    return Counter(seq for r in replicas for _, seq in taken(r))


def lane_holder(url: str, channel: str, conversation: str) -> int | None:
    """The pid of the replica holding ``conversation``'s lease (unexpired)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT holder FROM conversation_leases WHERE channel_id = %s AND lane = %s"
            " AND holder IS NOT NULL AND expires_at > now()",
            (channel, conversation),
        ).fetchone()
    return None if row is None else int(str(row[0]).split(":")[1])


def row_taken(url: str, channel: str, marker: str) -> bool:
    """The message starting with ``marker`` was taken (its turn runs) and is not done."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT 1 FROM connection_seen WHERE channel_id = %s"
            " AND taken_token IS NOT NULL AND payload->>'text' LIKE %s",
            (channel, marker + "%"),
        ).fetchone()
    return row is not None


async def until_taken(url: str, channel: str, marker: str, timeout: float = 60) -> None:
    with anyio.fail_after(timeout):
        while not await anyio.to_thread.run_sync(row_taken, url, channel, marker):
            await anyio.sleep(0.02)
