"""The shared limits on a real PostgreSQL, with a pool per replica: the listener's
limit per address drawn in batches from one bucket (few round trips, the same total as
one process), a flood refused without a round trip per request, a store out of reach
falling back to the process's own limit (logged once), and the API's conversation
claims (one holder at a time for the whole bot)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest
from structlog.testing import capture_logs

from thalos_bot.api.sink import ApiSink
from thalos_bot.channels.listeners.rate import RateLimit, RateLimiter, Receive, Scope, Send
from thalos_bot.channels.listeners.shared_rate import SharedRate
from thalos_bot.cluster.api_claims import PgConversationClaims
from thalos_bot.cluster.rate_buckets import PgRateBuckets
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio
MINUTE = 1  # one token a minute: nothing refills while a test runs


@pytest.fixture
async def pools(postgres_url: str) -> AsyncIterator[list[PgDatabase]]:
    """Three replicas' pools on one database."""
    opened = [await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS)]
    opened += [await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS)]
    opened += [await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS)]
    try:
        yield opened
    finally:
        for db in opened:
            await db.aclose()


def shared(db: PgDatabase, burst: int, scope: str = "web") -> SharedRate:
    local = RateLimiter(MINUTE, burst)
    return SharedRate(PgRateBuckets(db), scope, MINUTE, burst, local.take)


async def _hello(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def clients(limiters: list[SharedRate]) -> list[httpx.AsyncClient]:
    return [
        httpx.AsyncClient(transport=httpx.ASGITransport(RateLimit(_hello, limiter)))
        for limiter in limiters
    ]


async def test_a_small_burst_is_refused_at_the_same_request_as_on_one_process(
    pools: list[PgDatabase],
) -> None:
    replicas = clients([shared(db, 12) for db in pools])
    one = httpx.AsyncClient(transport=httpx.ASGITransport(RateLimit(_hello, RateLimiter(1, 12))))
    spread = [(await replicas[i % 3].get("http://bot/")).status_code for i in range(14)]
    alone = [(await one.get("http://bot/")).status_code for _ in range(14)]
    assert spread == alone == [200] * 12 + [429, 429]
    refused = await replicas[0].get("http://bot/")
    assert refused.status_code == 429
    assert 50 <= int(refused.headers["retry-after"]) <= 60  # one a minute, just spent
    for c in [*replicas, one]:
        await c.aclose()


async def test_a_large_burst_is_drawn_in_batches_and_spent_whole(
    pools: list[PgDatabase],
) -> None:
    limiters = [shared(db, 200) for db in pools]
    answers = [await limiters[i % 3].wait("10.0.0.1") for i in range(300)]
    admitted = [i for i, wait in enumerate(answers) if wait == 0.0]
    assert len(admitted) == 200, "every token of the burst, and not one more"
    first_refused = next(i for i, wait in enumerate(answers) if wait > 0)
    # Near the end the draws are of one token, so a replica holding the last few of
    # a batch can make another refuse a request or two early, never more.
    assert first_refused >= 200 - 2 * 2
    draws = sum(limiter.draws for limiter in limiters)
    assert draws < 100, f"{draws} round trips for 300 requests"
    other = await limiters[1].wait("10.0.0.2")
    assert other == 0.0, "another address has its own bucket"


async def test_a_flood_past_the_limit_costs_no_round_trip_per_request(
    pools: list[PgDatabase],
) -> None:
    limiter = shared(pools[0], 3)
    assert [await limiter.wait("10.0.0.9") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert await limiter.wait("10.0.0.9") > 0
    draws = limiter.draws
    waits = [await limiter.wait("10.0.0.9") for _ in range(1000)]
    assert all(w > 0 for w in waits)
    assert limiter.draws == draws, "refused from what the last draw said, until the refill"


async def test_the_api_keys_count_apart_from_the_addresses(pools: list[PgDatabase]) -> None:
    page, api = shared(pools[0], 2, "web"), shared(pools[1], 2, "api")
    assert [await page.wait("k") for _ in range(2)] == [0.0, 0.0]
    assert await api.wait("k") == 0.0, "a key named like an address has its own bucket"
    assert await page.wait("k") > 0


async def test_a_store_out_of_reach_falls_back_to_the_local_limit_logged_once(
    pools: list[PgDatabase],
) -> None:
    limiter = shared(pools[2], 3)
    await pools[2].aclose()
    with capture_logs() as logs:
        waits = [await limiter.wait("10.0.0.5") for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0], "the page stays up: counted by this process"
    assert all(w > 0 for w in waits[3:])
    down = [e for e in logs if e["event"] == "rate_limit_shared_down"]
    assert len(down) == 1
    assert down[0]["error"] == "DatabaseError"


async def test_a_store_that_does_not_answer_is_not_waited_for(pools: list[PgDatabase]) -> None:
    local = RateLimiter(MINUTE, 3)
    limiter = SharedRate(PgRateBuckets(pools[0]), "web", MINUTE, 3, local.take, bound=0.2)
    assert await limiter.wait("10.0.0.7") == 0.0  # its row exists, with a batch of one
    async with pools[1].transaction() as conn:
        # Another transaction holds the row: the next draw would wait for it.
        await conn.execute(
            "SELECT 1 FROM rate_buckets WHERE scope = 'web' AND key = '10.0.0.7' FOR UPDATE"
        )
        with capture_logs() as logs:
            assert await limiter.wait("10.0.0.7") == 0.0, "counted locally meanwhile"
    assert [e["error"] for e in logs if e["event"] == "rate_limit_shared_down"] == ["TimeoutError"]


async def test_a_conversation_is_held_by_one_request_of_the_whole_bot(
    pools: list[PgDatabase],
) -> None:
    one, two = PgConversationClaims(pools[0]), PgConversationClaims(pools[1])
    token = await one.claim("api:c1")
    assert token is not None
    assert await two.claim("api:c1") is None
    assert await two.claim("api:c2") is not None, "another conversation is free"
    assert await one.renew("api:c1", token)
    await one.release("api:c1", token)
    taken = await two.claim("api:c1")
    assert taken is not None
    assert not await one.renew("api:c1", token), "a released claim is not renewed"
    await one.release("api:c1", token)  # a late release of the old claim: nothing
    assert await one.claim("api:c1") is None, "the other replica still holds it"
    # A holder killed mid-answer: its claim runs out by the server's clock.
    async with pools[0].transaction() as conn:
        await conn.execute(
            "UPDATE conversation_leases SET expires_at = now() - interval '1 second'"
            " WHERE channel_id = 'api' AND lane = 'api:c1'"
        )
    assert await one.claim("api:c1") is not None


async def test_two_sinks_refuse_the_second_request_until_the_first_is_done(
    pools: list[PgDatabase],
) -> None:
    first = ApiSink(claims=PgConversationClaims(pools[0]))
    second = ApiSink(claims=PgConversationClaims(pools[1]))
    held = await first.claim("api:talk")
    assert held is not None
    assert await first.claim("api:talk") is None, "busy here, without asking the store"
    assert await second.claim("api:talk") is None, "busy on the other replica too"
    await first.done("api:talk", held)
    held.close()
    again = await second.claim("api:talk")
    assert again is not None
    await second.done("api:talk", again)
    again.close()
    with anyio.fail_after(5):
        last = await first.claim("api:talk")
    assert last is not None
    await first.done("api:talk", last)
    last.close()


class _LateClaims(PgConversationClaims):
    """Claims whose answer is lost after the claim was made (the statement timed out
    after its commit, say)."""

    async def claim(self, conversation: str) -> int | None:
        await super().claim(conversation)
        raise TimeoutError


async def test_a_claim_made_but_never_answered_is_let_go_when_its_request_ends(
    pools: list[PgDatabase],
) -> None:
    first = ApiSink(claims=_LateClaims(pools[0]))
    second = ApiSink(claims=PgConversationClaims(pools[1]))
    held = await first.claim("api:late")
    assert held is not None, "the request runs, counted here meanwhile"
    assert await second.claim("api:late") is None, "the claim was made all the same"
    await first.done("api:late", held)
    held.close()
    again = await second.claim("api:late")
    assert again is not None, "free at once, not after the claim's span"
    assert first.claims is not None
    await first.claims.release("api:late", None)
    assert await PgConversationClaims(pools[2]).claim("api:late") is None, (
        "a release by name lets go only that replica's own claim"
    )
    await second.done("api:late", again)
    again.close()


class _FirstLost(PgConversationClaims):
    """The first claim never reaches the store (it timed out waiting for it); releases
    wait for the test's word."""

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db)
        self.lost = False
        self.releasing, self.go = anyio.Event(), anyio.Event()

    async def claim(self, conversation: str) -> int | None:
        if not self.lost:
            self.lost = True
            raise TimeoutError
        return await super().claim(conversation)

    async def release(self, conversation: str, token: int | None) -> None:
        self.releasing.set()
        await self.go.wait()
        await super().release(conversation, token)


async def test_a_release_by_name_never_lets_go_of_the_next_requests_claim(
    pools: list[PgDatabase],
) -> None:
    claims = _FirstLost(pools[0])
    first, second = ApiSink(claims=claims), ApiSink(claims=PgConversationClaims(pools[1]))
    held = await first.claim("api:race")
    assert held is not None
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(first.done, "api:race", held)
            await claims.releasing.wait()
            assert await first.claim("api:race") is None, "held here until it is released"
            claims.go.set()
    held.close()
    again = await second.claim("api:race")
    assert again is not None, "released: free for the other replica"
    await second.done("api:race", again)
    again.close()
