"""The web listener's limits on three replicas sharing PostgreSQL (real ``thalos-bot
run`` daemons, requests sent to each replica's own port in turn, as a round-robin
balancer would): they hold for the whole bot, as on one process.

- an address past ``rate_burst`` is refused (429, Retry-After) at the request one
  replica would refuse;
- an API key past ``api_requests_per_minute`` likewise (429 ``rate_limit_exceeded``);
- a request of a conversation that is answering on another replica is refused as busy
  (429 ``conversation_busy``), and taken once that answer has ended.

Each part comes from an address of its own (127.0.0.x), so the per-address limit of one
part never counts another's requests. The refill (one request a minute per address,
three per key) is slow beside the test's few requests."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.channels.cli_process import run_piped
from tests.cluster.daemons import Daemons, running_daemons
from tests.fakes.telegram_api import TelegramFake

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
BURST = 12
PER_KEY = 3
WEB_KEYS = f"rate_limit = 1\nrate_burst = {BURST}\napi_requests_per_minute = {PER_KEY}\n"
KEY = re.compile(r"^(thk_\S+)$", re.MULTILINE)
LONG = "busy " + " ".join(f"w{i}" for i in range(150))
"""A message the scripted echo answers word by word for a few seconds."""


@pytest.fixture
async def daemons(fake: TelegramFake, postgres_url: str, tmp_path: Path) -> AsyncIterator[Daemons]:
    async with running_daemons(
        fake, postgres_url, tmp_path, lease=3.0, web=True, web_keys=WEB_KEYS
    ) as made:
        yield made


def client(address: str) -> httpx.AsyncClient:
    """Requests from ``address`` (a loopback address of its own)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    return httpx.AsyncClient(transport=transport, timeout=60)


def new_key(d: Daemons, person: str) -> str:
    home = d.replicas[0].home
    assert home is not None
    made = run_piped(["api", "key", "create", "--person", person], "", cwd=home, timeout=60)
    assert made.returncode == 0, made.stderr
    found = KEY.search(made.stdout)
    assert found is not None, made.stdout
    return found.group(1)


def streamed(lines: list[str]) -> str:
    """The answer's text, from a streamed answer's ``data:`` lines (to ``[DONE]``)."""
    lines = [line for line in lines if line]
    assert lines[-1] == "data: [DONE]", lines[-3:]
    chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])


def bases(d: Daemons) -> list[str]:
    return [f"http://127.0.0.1:{r.web_port}" for r in d.replicas]


async def test_the_limits_hold_across_replicas(daemons: Daemons) -> None:
    d = daemons
    every = bases(d)

    # The page's limit per address: the request past the burst is refused, whichever
    # replica it reaches (on one process: the same request).
    async with client("127.0.0.2") as page:
        answers = [await page.get(f"{every[i % 3]}/login") for i in range(BURST + 1)]
    assert [a.status_code for a in answers] == [200] * BURST + [429]
    assert int(answers[-1].headers["retry-after"]) >= 1

    # The API's limit per key.
    key = new_key(d, "p1")
    async with client("127.0.0.3") as api:
        headers = {"authorization": f"Bearer {key}"}
        models = [
            await api.get(f"{every[i % 3]}/v1/models", headers=headers) for i in range(PER_KEY + 1)
        ]
    assert [m.status_code for m in models] == [200] * PER_KEY + [429]
    assert models[-1].json()["error"]["code"] == "rate_limit_exceeded"
    assert int(models[-1].headers["retry-after"]) >= 1

    # One request at a time per conversation: the second, sent to another replica while
    # the first is answering, is busy; once the first has ended, it is taken.
    other = new_key(d, "p2")
    headers = {"authorization": f"Bearer {other}", "x-thalos-conversation": "one"}
    body = {"model": "assistant", "messages": [{"role": "user", "content": LONG}]}
    again = {"model": "assistant", "messages": [{"role": "user", "content": "again"}]}
    async with client("127.0.0.4") as api:
        url = "/v1/chat/completions"
        async with api.stream(
            "POST", every[0] + url, json={**body, "stream": True}, headers=headers
        ) as first:
            assert first.status_code == 200
            lines = first.aiter_lines()
            assert (await anext(lines)).startswith("data: ")  # the answer has begun
            busy = await api.post(every[1] + url, json=again, headers=headers)
            said = [line async for line in lines]
        assert busy.status_code == 429, busy.text
        assert busy.json()["error"]["code"] == "conversation_busy"
        assert busy.headers["retry-after"] == "1"
        assert streamed(said).endswith(" w149"), said[-3:]
        after = await api.post(every[2] + url, json=again, headers=headers)
    assert after.status_code == 200, after.text
    assert json.loads(after.text)["choices"][0]["message"]["content"] == "You said: again"
