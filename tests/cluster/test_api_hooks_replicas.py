"""The OpenAI-compatible API and a signed webhook on three replicas sharing PostgreSQL:
one chat request through HAProxy, to whichever replica, gets its answer once; a GitHub
delivery sent twice, to two different replicas, runs once and its answer reaches the
owner's Telegram chat once. The key is made once, in one replica's folder, and every
replica knows it (the keys are in the shared store)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio.to_thread
import httpx
import openai
import psycopg
import pytest

from tests.channels.cli_process import run_piped
from tests.cluster.daemons import ALLOWED, Daemons, running_daemons
from tests.cluster.processes import Replica
from tests.fakes.telegram_api import TelegramFake
from tests.hooks.harness import GITHUB_ENV, PROMPT, github_headers, issue_payload, new_secret

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
OWNER = ALLOWED[0]
SECRET = new_secret()
HOOK = f"""
[[hooks]]
name = "github"
path = "/hooks/github"
secret_env = "{GITHUB_ENV}"
scheme = "github"
principal = "owner"
deliver_to = "telegram:{OWNER}"
prompt = "{PROMPT}"
"""
KEY = re.compile(r"^(thk_\S+)$", re.MULTILINE)


@pytest.fixture
async def daemons(fake: TelegramFake, postgres_url: str, tmp_path: Path) -> AsyncIterator[Daemons]:
    async with running_daemons(
        fake, postgres_url, tmp_path, lease=3.0, env={GITHUB_ENV: SECRET}, sections=HOOK, web=True
    ) as made:
        yield made


def hook_states(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT state FROM hook_deliveries").fetchall()
    return [str(row[0]) for row in rows]


async def test_the_api_and_a_hook_on_three_replicas(daemons: Daemons) -> None:
    d = daemons
    assert d.web is not None
    d.fake.add_chat(OWNER)
    homes = [r.home for r in d.replicas if r.home is not None]
    made = run_piped(["api", "key", "create", "--person", "p1"], "", cwd=homes[0], timeout=60)
    assert made.returncode == 0, made.stderr
    found = KEY.search(made.stdout)
    assert found is not None, made.stdout
    # A delivery to one replica, then the same one to another: one run.
    body = issue_payload()
    headers = github_headers(SECRET, body)
    ports = [r.web_port for r in d.replicas]
    async with httpx.AsyncClient() as client:
        first = await client.post(
            f"http://127.0.0.1:{ports[0]}/hooks/github", content=body, headers=headers
        )
        again = await client.post(
            f"http://127.0.0.1:{ports[1]}/hooks/github", content=body, headers=headers
        )
    assert (first.status_code, again.status_code) == (202, 200), first.text + again.text
    # One chat request through the proxy, to whichever replica it picks.
    api = openai.OpenAI(base_url=f"{d.web.base}/v1", api_key=found.group(1), max_retries=0)
    done = await anyio.to_thread.run_sync(
        lambda: api.chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "hello, cluster"}]
        )
    )
    assert done.choices[0].message.content == "You said: hello, cluster"
    answers = await d.fake.wait_for(
        lambda: [t for t in d.fake.texts(OWNER) if t.startswith("You said: Summarise")], 60
    )
    await d.fake.wait_for(lambda: hook_states(d.url) == ["done"], 30)
    assert len(answers) == 1
    assert len([t for t in d.fake.texts(OWNER) if t.startswith("You said: Summarise")]) == 1
    # One replica ran the chat turn and delivered its answer (its log says so once).
    answered = await d.fake.wait_for(lambda: api_deliveries(d.replicas), 30)
    assert answered == [1]


def api_deliveries(replicas: list[Replica]) -> list[int]:
    """How many API answers each replica delivered, for those that delivered any."""
    counts = [
        sum('"conversation": "api:' in line for line in r.log.read_text().splitlines())
        for r in replicas
    ]
    return [c for c in counts if c]
