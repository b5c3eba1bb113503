"""Under the homeserver's real rate limit: 429 M_LIMIT_EXCEEDED is waited out as its
retry_after_ms says, in every room (the homeserver limits the account), and every
answer's final text still lands, once; a long answer is split into events under 64 KiB."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import httpx2
import pytest
from structlog.testing import capture_logs

from tests.matrix.accounts import Account, register, unique
from tests.matrix.bot import running_bot
from tests.matrix.human import Human
from tests.matrix.proxy import Proxy
from tests.matrix.synapse import SynapseServer
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot_matrix.render import CONTENT_MAX_BYTES, EVENT_MAX_BYTES

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _limit(
    server: SynapseServer, admin: Account, user: str, per_second: int, burst: int
) -> None:
    async with httpx2.AsyncClient(base_url=server.base_url, timeout=30.0) as http:
        answer = await http.post(
            f"/_synapse/admin/v1/users/{user}/override_ratelimit",
            headers={"Authorization": f"Bearer {admin.access_token}"},
            json={"messages_per_second": per_second, "burst_count": burst},
        )
    assert answer.status_code == 200, answer.text


def _paragraphs(count: int, words: int) -> list[str]:
    """Paragraphs of numbered words, so that no two parts of the answer read alike."""
    return [" ".join(f"w{n}.{i}" for i in range(words)) + "\n\n" for n in range(count)]


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


async def test_a_flood_is_paced_to_429s_and_a_long_answer_lands_whole_in_parts(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    admin = await register(synapse, unique("admin"), admin=True)
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    # One message a second, a burst of two: a long answer's parts (sent back to back)
    # and its streamed edits meet real 429s.
    await _limit(synapse, admin, bot.user_id, 1, 2)
    chunks = _paragraphs(3, 2_700)  # ~60 kB: more than one event can hold, 7 parts
    answer = "".join(chunks)
    assert len(answer.encode()) > CONTENT_MAX_BYTES
    provider = ScriptedProvider([[Say(*chunks, delay=0.02)]])
    with capture_logs() as logs:
        async with (
            running_bot(
                synapse,
                bot,
                [alice.user_id],
                monkeypatch,
                tmp_path,
                provider,
                room_min_interval=0.01,
            ),
            Human(synapse, alice) as human,
        ):
            room = await human.direct_chat(bot.user_id)
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say(room, "write a lot")

            def whole(h: Human) -> bool:
                # Every word, in order, once (a part cut at a space or a paragraph break
                # does not carry that break).
                return _squeezed("".join(h.bodies(room, bot.user_id))) == _squeezed(answer)

            await human.until(whole)
            shown = human.shown(room, bot.user_id)
            events = human.events_of(room, bot.user_id, "m.room.message")
    limited = [e for e in logs if e["event"] == "matrix_flood_wait"]
    assert limited, "the homeserver never answered 429"
    assert all(e["retry_after"] > 0 for e in limited), "retry_after_ms read from the body"
    assert len(shown) >= 3, "split into parts"
    assert all(len(json.dumps(e).encode()) < EVENT_MAX_BYTES for e in events)
    refused = [e for e in logs if e["event"] == "matrix_call_refused"]
    assert refused == []
    # Each part once: no message was sent twice.
    assert len({m.body for m in shown}) == len(shown)


async def test_two_rooms_under_429s_send_nothing_during_a_wait_and_each_answer_lands_once(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    admin = await register(synapse, unique("admin"), admin=True)
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    bob = await register(synapse, unique("bob"))
    me = bot.user_id
    # Alice's answer streams (a message, then edits as it grows) into 429s; Bob's starts
    # while it does.
    chunks = ["Counting:", *(f" {n}" for n in range(1, 9)), "."]
    counted = "".join(chunks)
    provider = ScriptedProvider([[Say(*chunks, delay=0.2)], [Say("Hello Bob.")]])
    proxy = Proxy(synapse.base_url)
    try:
        async with anyio.create_task_group() as group:
            await proxy.run(group)
            with capture_logs() as logs:
                async with (
                    running_bot(
                        synapse,
                        bot,
                        [alice.user_id, bob.user_id],
                        monkeypatch,
                        tmp_path,
                        provider,
                        homeserver=proxy.base_url,
                    ),
                    Human(synapse, alice) as first,
                    Human(synapse, bob) as second,
                ):
                    one = await first.direct_chat(me)
                    other = await second.direct_chat(me)
                    await first.until(lambda h: h.joined(one, me))
                    await second.until(lambda h: h.joined(other, me))
                    # One message a second, no burst.
                    await _limit(synapse, admin, me, 1, 1)
                    await first.say(one, "count")
                    await first.until(lambda h: h.bodies(one, me))
                    await second.say(other, "hello")
                    await first.until(lambda h: h.bodies(one, me) == [counted])
                    await second.until(lambda h: h.bodies(other, me) == ["Hello Bob."])
            group.cancel_scope.cancel()
    finally:
        await proxy.aclose()
    assert [e for e in logs if e["event"] == "matrix_flood_wait"], "no 429 was met"
    assert proxy.violations == 0, "a room sent while a 429's wait ran"
