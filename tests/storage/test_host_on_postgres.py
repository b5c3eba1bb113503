"""The whole daemon on a real PostgreSQL: ``[storage] url = "postgresql://…"`` in
bot.toml, the Telegram fake and the Anthropic fake. A preference remembered in one run
is recalled after a restart (memory on the server), the conversation continues its
session (bindings and history on the server), and nothing shared is left in the
replica's own SQLite file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.daemon_config import anthropic_provider, telegram_daemon_config
from tests.fakes.anthropic_api import AnthropicFake, text_reply, tool_use_reply
from tests.fakes.telegram_api import TelegramFake
from tests.storage.conftest import PostgresSchema
from thalos_bot.config.loader import load_settings
from thalos_bot.config.storage import LOCAL_DATABASE
from thalos_bot.service.host import open_host
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one

pytestmark = pytest.mark.anyio

USER = 6161
TOKEN = "616161:TEST-postgres-host"
PREFERENCE = "Prefers distances in kilometres"
AGENT = """
[[agents]]
id = "assistant"
name = "Assistant"
instructions = "You help."
memory = { enabled = true, top_k = 5 }
"""


def _system(body: dict[str, object]) -> str:
    system = body.get("system", [])
    if isinstance(system, str):
        return system
    assert isinstance(system, list)
    return "\n".join(str(block["text"]) for block in system)


async def _exchange(
    loaded_path: Path, telegram: TelegramFake, say: str, expect: str, engine: str = "postgresql"
) -> None:
    loaded = load_settings(loaded_path)
    async with (
        open_host(loaded, channels=["telegram"]) as host,
        anyio.create_task_group() as group,
    ):
        assert host.stores.engine == engine
        group.start_soon(host.pump.run, host.sources)
        telegram.push_text(USER, USER, say)
        assert await telegram.wait_for(lambda: expect in telegram.texts(USER) or None, 30)
        host.pump.stop()


async def test_the_daemon_keeps_its_state_on_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_schema: PostgresSchema
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    with TelegramFake(TOKEN) as telegram, AnthropicFake() as anthropic:
        storage = f'[storage]\nurl = "{postgres_schema.url()}"\n'
        config = telegram_daemon_config(
            telegram.base_url,
            USER,
            provider=anthropic_provider(anthropic.base_url),
            sections=storage + AGENT,
        )
        path = tmp_path / "bot.toml"
        path.write_text(config, encoding="utf-8")
        anthropic.enqueue(
            tool_use_reply("memory__remember", {"text": PREFERENCE, "kind": "preference"}),
            text_reply("Noted."),
        )
        await _exchange(path, telegram, "Always give me kilometres, please.", "Noted.")

        anthropic.enqueue(text_reply("About 42 km."))
        await _exchange(path, telegram, "How far is a marathon in kilometres?", "About 42 km.")

    third = anthropic.requests[2].body
    assert PREFERENCE in _system(third), "recalled from PostgreSQL after the restart"
    assert "Always give me kilometres, please." in json.dumps(third["messages"]), (
        "the conversation continued its session from PostgreSQL"
    )
    async with await PgDatabase.open(postgres_schema.url()) as pg, pg.read() as conn:
        sessions = await fetch_one(conn, "SELECT count(*) AS n FROM sessions")
        memories = await fetch_all(conn, "SELECT text FROM memories")
    assert sessions is not None
    assert sessions["n"] == 1
    assert [m["text"] for m in memories] == [PREFERENCE]
    local = tmp_path / "state" / LOCAL_DATABASE
    with sqlite3.connect(local) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def _db_copy(config: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thalos_bot.cli.main", "db", "copy", "--to", url, "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_db_copy_moves_a_sqlite_state_and_the_daemon_goes_on_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_schema: PostgresSchema
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    url = postgres_schema.url()
    with TelegramFake(TOKEN) as telegram, AnthropicFake() as anthropic:

        def config(storage: str) -> Path:
            path = tmp_path / "bot.toml"
            text = telegram_daemon_config(
                telegram.base_url,
                USER,
                provider=anthropic_provider(anthropic.base_url),
                sections=storage + AGENT,
            )
            path.write_text(text, encoding="utf-8")
            return path

        sqlite_config = config("")
        anthropic.enqueue(
            tool_use_reply("memory__remember", {"text": PREFERENCE, "kind": "preference"}),
            text_reply("Noted."),
        )
        await _exchange(sqlite_config, telegram, "Kilometres, please.", "Noted.", "sqlite")

        copied = _db_copy(sqlite_config, url)
        assert copied.returncode == 0, copied.stderr
        lines = copied.stdout.splitlines()
        assert "copied memories: 1 row" in lines
        assert "copied sessions: 1 row" in lines
        assert "copied conversation_bindings: 1 row" in lines
        assert lines[-1].startswith("copied ")
        assert "password" not in copied.stdout

        again = _db_copy(sqlite_config, url)
        assert again.returncode == 1
        assert "already holds state" in again.stderr

        pg_config = config(f'[storage]\nurl = "{url}"\n')
        anthropic.enqueue(text_reply("About 42 km."))
        await _exchange(pg_config, telegram, "How far is a marathon?", "About 42 km.")
        anthropic.enqueue(
            tool_use_reply("memory__remember", {"text": "Lives in Lyon", "kind": "fact"}),
            text_reply("Got it."),
        )
        await _exchange(pg_config, telegram, "I live in Lyon.", "Got it.")

    third = anthropic.requests[2].body
    assert PREFERENCE in _system(third), "the copied memory is recalled"
    assert "Kilometres, please." in json.dumps(third["messages"]), "the copied session goes on"
    async with await PgDatabase.open(url) as pg, pg.read() as conn:
        memories = await fetch_all(conn, "SELECT seq, text FROM memories ORDER BY seq")
    assert [m["text"] for m in memories] == [PREFERENCE, "Lives in Lyon"]
    assert memories[1]["seq"] > memories[0]["seq"], "the identity moved past copied rows"
