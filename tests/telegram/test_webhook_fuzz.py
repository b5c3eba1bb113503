"""Fuzzing Telegram's webhook receiver (issue 37): deliveries of any shape, with and
without the secret, through the listener's real ASGI app. Each is answered 200, 400,
401 or 413, never a 5xx (Telegram would retry it forever) and never raised on; only an
allowed person's update with a usable ``update_id`` is stored, in its chat's lane."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.channels.fuzz_json import json_values, shaped
from tests.hypothesis_budget import examples
from thalos_bot_telegram.webhook import lane_of
from thalos_bot_telegram.webhook_intake import PATH, SECRET_HEADER, Listener

SECRET = "fuzz-secret_0123456789"
OWNER = 4242
BIGINT = 2**63 - 1
"""The inbox's update_id column (PostgreSQL bigint)."""


class Stored:
    """The inbox, as the listener uses it: what was put, refusing what PostgreSQL would."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str]] = []

    async def put(self, update_id: int, lane: str, payload: Mapping[str, Any]) -> bool:
        assert 0 <= update_id <= BIGINT, update_id
        json.dumps(payload)  # stored as jsonb: it must serialise
        self.rows.append((update_id, lane))
        return True


people = st.sampled_from([OWNER, 1, "4242", None])
chats = shaped({"id": people}, {"type": st.sampled_from(["private", "group"])})
message = shaped({"from": shaped({"id": people}), "chat": chats}, {"text": st.text(max_size=30)})
updates = shaped(
    {"update_id": st.integers(min_value=-5, max_value=2**70) | json_values},
    {
        "message": message,
        "edited_message": message,
        "callback_query": shaped(
            {"from": shaped({"id": people})}, {"message": shaped({"chat": chats})}
        ),
    },
)
bodies = updates.map(lambda u: json.dumps(u).encode()) | st.binary(max_size=200)
secrets = st.sampled_from([SECRET, "", "wrong", SECRET + "x"])


@settings(max_examples=examples(300), deadline=None, database=None)
@given(body=bodies, secret=secrets)
def test_any_delivery_is_answered_without_a_5xx(body: bytes, secret: str) -> None:
    inbox = Stored()
    listener = Listener(inbox, SECRET, lane_of(frozenset({OWNER})))  # type: ignore[arg-type]

    async def deliver() -> httpx.Response:
        transport = httpx.ASGITransport(app=listener.app())
        async with httpx.AsyncClient(transport=transport, base_url="http://hook") as client:
            return await client.post(PATH, content=body, headers={SECRET_HEADER: secret})

    answer = anyio.run(deliver)
    assert answer.status_code in {200, 400, 401, 413}, (answer.status_code, body[:200])
    if secret != SECRET:
        assert answer.status_code == 401
        assert inbox.rows == []
    for _, lane in inbox.rows:
        assert lane.lstrip("-").isdigit()
