"""``mode = "webhook"``: its settings are checked like every other, file, key and fix;
polling beside another live replica is refused with the reason; the rate is shared."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.storage.conftest import PostgresSchema
from tests.telegram.harness import CATALOG, make_config
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.cli.main import main
from thalos_bot.cluster.replicas import ReplicaTable
from thalos_bot.config.models import Settings
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_telegram import SECRET_ENV
from thalos_bot_telegram.manifest import manifest as plugin
from thalos_bot_telegram.webhook import polling_alone, read_secret

BASE = "[channels.telegram]\nenabled = true\nallowed_user_ids = [4242]\n"


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "bot.toml"
    path.write_text(BASE + text)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        code = main(["check", "--config", str(path)])
    finally:  # main() logs to this test's captured stderr; later tests must not
        root.handlers[:] = handlers
        root.setLevel(level)
    return code, capsys.readouterr().err


def test_webhook_mode_needs_the_public_https_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = check(tmp_path, 'mode = "webhook"\n', capsys)
    assert code == 2
    assert 'bot.toml: channels.telegram: webhook_url: mode = "webhook" needs the public' in err


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('mode = "hook"\n', "channels.telegram.mode"),
        ('mode = "webhook"\nwebhook_url = "http://bot.example.com/t"\n', "webhook_url"),
        ('webhook_listen = "8081"\n', "channels.telegram.webhook_listen"),
    ],
)
def test_bad_webhook_settings_name_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str
) -> None:
    code, err = check(tmp_path, text, capsys)
    assert code == 2
    assert key in err


def test_a_complete_webhook_section_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = 'mode = "webhook"\nwebhook_url = "https://bot.example.com/telegram"\n'
    code, err = check(tmp_path, text, capsys)
    assert code == 0, err


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url) as opened:
        yield opened


@pytest.mark.anyio
async def test_polling_beside_a_live_replica_is_refused_with_the_reason(
    db: PgDatabase, postgres_url: str
) -> None:
    await ReplicaTable(db, "host-a:1:aa", alive=15).beat("webhook")
    with pytest.raises(ExceptionGroup) as raised:
        async with anyio.create_task_group() as group, polling_alone(postgres_url, 15, group):
            pass
    (refused,) = raised.value.exceptions
    assert isinstance(refused, ChannelFatalError)
    assert "Telegram allows one getUpdates consumer per bot token" in refused.message
    assert "host-a:1:aa (webhook)" in refused.message


@pytest.mark.anyio
async def test_a_lone_poller_starts_and_is_seen_by_the_others(
    db: PgDatabase, postgres_url: str
) -> None:
    other = ReplicaTable(db, "host-b:2:bb", alive=15)
    async with anyio.create_task_group() as group:
        async with polling_alone(postgres_url, 15, group):
            seen = await other.others()
            assert len(seen) == 1
            assert seen[0].endswith("(polling)")
        assert await other.others() == [], "it leaves the table when it stops"


@pytest.mark.anyio
async def test_the_rate_is_shared_by_the_live_replicas(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    tables = [ReplicaTable(db, f"r{i}", alive=15) for i in range(3)]
    for table in tables:
        await table.beat("webhook")
    assert await tables[0].share(30.0) == 10.0
    postgres_schema.sql("UPDATE replicas SET seen_at = now() - interval '1 minute' WHERE id = 'r2'")
    assert await tables[0].share(30.0) == 15.0, "a replica not heard from is not counted"


@pytest.mark.parametrize("secret", ["", "has spaces", "colon:not-allowed", "x" * 257])
def test_a_missing_or_unusable_webhook_secret_is_refused_with_the_rule(
    monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    monkeypatch.setenv(SECRET_ENV, secret)
    with pytest.raises(ChannelFatalError) as refused:
        read_secret()
    said = refused.value.message
    assert SECRET_ENV in said, "it names the variable"
    assert "1-256 characters" in said, "and the rule"
    assert "in the environment" in said, "and where to put it"
    assert secret not in said or not secret, "the secret is never echoed"


@pytest.mark.anyio
async def test_webhook_mode_on_the_sqlite_store_is_refused_with_what_to_set(
    fake: TelegramFake, tmp_path: Path
) -> None:
    config = make_config(fake, mode="webhook", webhook_url="https://bot.example.com/telegram")
    host = ChannelHost.of(Settings(), CATALOG, tmp_path)
    with pytest.raises(ChannelFatalError) as refused:
        async with plugin.open(config, host):
            pass
    assert '[storage] url = "postgresql://' in refused.value.message
    assert fake.calls("setWebhook") == [], "nothing registered"
