"""Telegram polling on replicas: two real daemons on one PostgreSQL store, polling the
fake (which ends a second getUpdates consumer's poll with 409, as Telegram does). The
second replica stands by instead of refusing to start; a clean stop hands the poll over
at once; after ``kill -9`` a standby takes it once the dead owner's guard row ran out
(``lease_seconds``). Updates sent in between wait at Telegram, and one confirmed but
not yet taken waits beside the lease: none is lost, none is answered twice."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.channels.contract.daemon import PNG
from tests.cluster.connection_daemons import ANSWER, owner_pid, start
from tests.cluster.processes import Replica
from tests.cluster.stall import probe_text
from tests.daemon_config import telegram_daemon_config
from tests.fakes.telegram_api import TelegramFake
from thalos_bot_telegram import TOKEN_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]
USER = 4242


def replicas_config(fake: TelegramFake, postgres_url: str) -> str:
    """Replicas on one store, with short leases (a handover within seconds)."""
    return telegram_daemon_config(
        fake.base_url,
        USER,
        sections=f'[logging]\nformat = "json"\n[storage]\nurl = "{postgres_url}"\n'
        'connection_lease = "2s"',
        telegram='lease_seconds = "3s"',
    )


async def owner(url: str, replicas: list[Replica], timeout: float = 30) -> Replica:
    with anyio.fail_after(timeout):
        while True:
            pid = await anyio.to_thread.run_sync(owner_pid, url, "telegram")
            found = [r for r in replicas if r.pid == pid]
            if found:
                return found[0]
            await anyio.sleep(0.1)


async def answered(fake: TelegramFake, text: str, timeout: float = 60) -> None:
    fake.push_text(USER, USER, text)
    await fake.wait_for(lambda: ANSWER + text in fake.texts(USER), timeout)


async def none_answered_twice(fake: TelegramFake, texts: list[str]) -> None:
    """Checked once at the end, after a probe was answered (tests/cluster/stall.py): a
    second answer to an early message (a handover that let two replicas take one
    update) has had the whole test to arrive."""
    await answered(fake, probe_text())
    said = fake.texts(USER)
    assert [said.count(ANSWER + text) for text in texts] == [1] * len(texts), said


async def test_a_second_polling_replica_stands_by_and_takes_over(
    fake: TelegramFake, postgres_url: str, tmp_path: Path
) -> None:
    config = replicas_config(fake, postgres_url)
    env = {TOKEN_ENV: fake.token}
    replicas: list[Replica] = []
    try:
        for index in range(2):
            replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
        await answered(fake, "one")
        first = await owner(postgres_url, replicas)

        assert await first.terminate() == 0  # the poll is handed over at once
        await answered(fake, "two")
        second = await owner(postgres_url, replicas)
        assert second is not first

        replicas.append(await start(tmp_path, config, env, 2))
        second.kill()  # its lease and its guard row run out
        await answered(fake, "three")
        third = await owner(postgres_url, replicas)
        assert third is replicas[2]
        await none_answered_twice(fake, ["one", "two", "three"])
    finally:
        for replica in replicas:
            replica.close()


async def test_a_photo_downloading_at_a_handover_is_answered_by_the_next_owner(
    fake: TelegramFake, postgres_url: str, tmp_path: Path
) -> None:
    """Confirmed to Telegram, not yet taken by the owner's pump when it stops: the held
    update lives beside the polling lease, so the standby that takes the poll over
    answers it, once."""
    config = replicas_config(fake, postgres_url)
    env = {TOKEN_ENV: fake.token}
    replicas: list[Replica] = []
    try:
        for index in range(2):
            replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
        await answered(fake, "one")
        first = await owner(postgres_url, replicas)
        fake.files.served.clear()
        fake.push_photo(USER, USER, PNG, caption="what is this?")
        await fake.wait_for(lambda: fake.files.asked == 1, 30)
        assert await first.terminate() == 0
        fake.files.served.set()
        await fake.wait_for(lambda: ANSWER + "what is this?" in fake.texts(USER), 60)
        assert await owner(postgres_url, replicas) is not first
        await none_answered_twice(fake, ["one", "what is this?"])
    finally:
        for replica in replicas:
            replica.close()
