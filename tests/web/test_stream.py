"""The event stream over real HTTP: resuming with Last-Event-ID misses nothing, and the
final answer comes exactly once, whatever the connection did."""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.web.harness import WebDaemon
from tests.web.sse import Sse, read_until

pytestmark = pytest.mark.slow

WORDS = ["one ", "two ", "three ", "four ", "five"]


def _final(seen: list[Sse]) -> bool:
    return any(e.kind == "final" for e in seen)


def _partial(seen: list[Sse]) -> bool:
    return any(e.kind == "partial" for e in seen)


def test_a_dropped_stream_resumes_after_its_last_event(
    daemon: WebDaemon, fake: AnthropicFake
) -> None:
    client = daemon.login("p8")
    token = daemon.csrf(client)
    fake.enqueue(text_reply(*WORDS, chunk_delay=0.2))
    assert (
        client.post(
            "/api/send", data={"text": "count"}, headers={"X-CSRF-Token": token}
        ).status_code
        == 202
    )
    before = read_until(client, _partial)  # then the connection drops mid-answer
    assert not _final(before)
    after = read_until(client, _final, last_id=before[-1].id)
    ids = [e.id for e in before + after]
    assert len(ids) == len(set(ids)), "an event came twice"
    assert [e.kind for e in after if e.kind in {"reset", "user", "turn"}] == []
    finals = [e for e in after if e.kind == "final"]
    assert len(finals) == 1
    assert "one two three four five" in finals[0].data["html"]
    # A tab opened later gets the answer once, as one final, and no partial of it.
    later = read_until(client, _final)
    assert [e.kind for e in later].count("final") == 1
    assert not _partial(later)
    assert [e.data["html"] for e in later if e.kind == "user"] == ["count"]


def test_an_id_from_another_run_replays_everything_after_a_reset(daemon: WebDaemon) -> None:
    client = daemon.login("p9")
    token = daemon.csrf(client)
    client.post("/api/send", data={"text": "/help"}, headers={"X-CSRF-Token": token})
    seen = read_until(client, lambda s: any(e.kind == "notice" for e in s), last_id="0123abcd-7")
    assert seen[0].kind == "reset"
    assert [e.data["html"] for e in seen if e.kind == "user"] == ["/help"]
