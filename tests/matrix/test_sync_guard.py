"""One event that fails while the sync handles it stays with that event: the kit's
guard logs it (``matrix_update_failed``, with no text of the message), and the next
event of the batch is handled as usual."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from structlog.testing import capture_logs

from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot_matrix.client import JSON
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import Syncer

pytestmark = pytest.mark.anyio

ROOM = "!room:example.org"
SECRET = "my card number is 4111 1111"


class Admission:
    """Admits everyone; raises on the event whose body is :data:`SECRET`, quoting it."""

    me = "@bot:example.org"
    allowed_users = frozenset({"@alice:example.org"})
    rooms: frozenset[str] = frozenset()

    async def admit(self, room_id: str, sender: str, event: JSON) -> str:
        body = event["content"]["body"]
        if body == SECRET:
            raise ValueError(f"could not read {body!r}")
        return f"admitted {event['event_id']}"


def _message(event_id: str, body: str) -> JSON:
    return {
        "type": "m.room.message",
        "event_id": event_id,
        "sender": "@alice:example.org",
        "content": {"msgtype": "m.text", "body": body},
    }


async def test_a_failed_event_is_logged_without_its_text_and_the_next_is_handled(
    tmp_path: Path,
) -> None:
    told: list[tuple[str, str]] = []
    unused: Any = SimpleNamespace()
    admission: Any = Admission()
    syncer = Syncer(
        client=unused,
        me=admission.me,
        state=SyncState(KeptState(tmp_path / "sync.json")),
        timeout=30,
        link=Reconnecting("matrix_sync", Backoff(1.0, 30.0)),
        crypto=None,
        admission=admission,
        intake=unused,
        approvals=unused,
        notify=lambda room, text: told.append((room, text)),
    )
    timeline = [_message("$1", SECRET), _message("$2", "hello")]
    batch: JSON = {"rooms": {"join": {ROOM: {"timeline": {"events": timeline}}}}}
    with capture_logs() as logs:
        await syncer.handle(batch, history=False)
    assert told == [(ROOM, "admitted $2")], "the event after the failed one is handled"
    failed = [e for e in logs if e["event"] == "matrix_update_failed"]
    assert len(failed) == 1
    assert failed[0]["error"] == "ValueError"
    assert failed[0]["room"] == ROOM
    assert failed[0]["where"].startswith("test_sync_guard.py:")
    assert "4111" not in repr(logs), "no log line carries the message's text"
