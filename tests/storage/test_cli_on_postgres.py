"""``thalos-bot audit``, ``schedules`` and ``status`` on a real PostgreSQL store: the same
lines as on SQLite, read through the daemon's own stores (the composition root)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest

from tests.storage.conftest import PostgresSchema
from thalos_bot.cli.main import main
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.config.loader import load_settings
from thalos_bot.config.memory import EmbeddingSettings, MemorySettings
from thalos_bot.domain.address import Address
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.messages import Message, message_to_json
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.embedders import build_embedder
from thalos_bot.schedules.store import NewSchedule
from thalos_bot.service.stores import open_stores
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.media import PgMediaStore
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry
from thalos_bot.tools.gate import AuditEntry

NOW = datetime.now(UTC)
NO_EMBEDDER = build_embedder(EmbeddingSettings(mode="off"))


def stores_settings(path: Path) -> MemorySettings:
    return load_settings(path).settings.memory


def config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(f'state_dir = "state"\n[storage]\nurl = "{url}"\n', encoding="utf-8")
    return path


async def seed(path: Path) -> str:
    async with open_stores(load_settings(path)) as stores:
        assert stores.engine == "postgresql"
        await stores.audit.record(
            AuditEntry(
                NOW - timedelta(minutes=5),
                SessionId("s_pg"),
                "telegram:42",
                "fs__write_file",
                "b" * 64,
                "approved",
                "telegram:42",
            )
        )
        made = await stores.schedules.create(
            NewSchedule(
                SecurityContext.of("alice"),
                "assistant",
                "Water the plants.",
                Address.parse("telegram:42"),
                cron="0 9 * * 1",
                timezone="Europe/Berlin",
            ),
            NOW,
        )
        return made.id


def test_audit_and_schedules_read_the_shared_store(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, postgres_url)
    schedule_id = anyio.run(seed, path)
    capsys.readouterr()
    assert main(["audit", "-c", str(path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "telegram:42  fs__write_file  approved  by telegram:42  args bbbbbbbbbbbb" in line
    assert main(["schedules", "list", "-c", str(path)]) == 0
    (listed,) = capsys.readouterr().out.splitlines()
    assert listed.startswith(f"{schedule_id}: cron '0 9 * * 1' (Europe/Berlin), next ")
    assert "owner alice" in listed
    assert main(["schedules", "cancel", schedule_id, "-c", str(path)]) == 0
    assert f"cancelled {schedule_id}" in capsys.readouterr().out
    assert main(["schedules", "list", "-c", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "no pending schedules"
    assert not (tmp_path / "state" / "thalos.db").exists(), "no SQLite state was made"


def test_an_unreachable_server_is_named_without_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THALOS_DATABASE_PASSWORD", "hunter2")
    path = config(tmp_path, "postgresql://bot@127.0.0.1:1/thalos")
    for command in (["audit"], ["memory", "list"], ["media", "prune"]):
        assert main([*command, "-c", str(path)]) != 0, command
        err = capsys.readouterr().err
        assert "postgresql://bot@127.0.0.1:1/thalos: cannot connect" in err, command
        assert "hunter2" not in err
        assert "Traceback" not in err
    assert main(["status", "-c", str(path)]) == 0  # the daemon's part is still shown
    out = capsys.readouterr().out
    assert "daemon: not running" in out
    (line,) = [x for x in out.splitlines() if x.startswith("database: ")]
    assert "postgresql://bot@127.0.0.1:1/thalos cannot be read" in line
    assert main(["doctor", "--offline", "-c", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    (at,) = [i for i, x in enumerate(lines) if "database and" in x]
    assert lines[at].startswith("✗")
    assert "postgresql://bot@127.0.0.1:1/thalos: cannot connect" in lines[at]
    assert "THALOS_DATABASE_PASSWORD" in lines[at + 1], "where the password comes from"
    assert "hunter2" not in "\n".join(lines) + out


async def seed_status(path: Path) -> None:
    loaded = load_settings(path)
    async with open_stores(loaded) as stores:
        address = OutboxAddress(ChannelId("telegram"), ConversationId("42"), "k-1")
        await stores.outbox.add(OutboxEntry(address, "an answer not yet shown"), NOW)
        await stores.outbox.add(
            OutboxEntry(OutboxAddress(ChannelId("telegram"), ConversationId("43"), "k-2"), "x"),
            NOW,
        )
        assert isinstance(stores.shared, PgDatabase)
        owner = ConnectionLease(stores.shared, "discord", "host-a:4242:abc", 30.0)
        assert await owner.acquire()
        # Today as `status` reads it (not NOW, taken when the module was collected: a
        # run that crossed midnight meanwhile seeded yesterday).
        today = datetime.now(UTC).astimezone(ZoneInfo(loaded.settings.limits.timezone))
        await stores.usage.add(
            "alice",
            today.date().isoformat(),
            TokenUsage(1000, 200, 30, 4),
            0.25,
        )


def test_status_reads_the_shared_store(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, postgres_url)
    schedule_id = anyio.run(seed, path)
    anyio.run(seed_status, path)
    capsys.readouterr()
    assert main(["status", "-c", str(path)]) == 0
    out = capsys.readouterr().out
    assert "outbox: 2 pending" in out
    assert "next schedules:\n  " in out
    assert "cron '0 9 * * 1'" in out
    assert ": 1,234 tokens, about $0.25" in out
    assert "connection discord: replica host-a:4242:abc since " in out
    assert "database:" not in out
    assert main(["status", "--json", "-c", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["outbox_pending"] == 2
    assert [s["id"] for s in report["next_schedules"]] == [schedule_id]
    assert report["today"]["tokens"] == 1234
    assert report["database_problem"] is None
    assert not (tmp_path / "state" / "thalos.db").exists(), "no SQLite state was made"


def test_doctor_checks_the_shared_store(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, postgres_url)
    main(["doctor", "--offline", "-c", str(path)])
    (fresh,) = [x for x in capsys.readouterr().out.splitlines() if "database and" in x]
    assert "migration(s) will run at the next start" in fresh, "doctor never migrates"
    schedule_id = anyio.run(seed, path)  # the daemon's stores migrate, then a schedule
    capsys.readouterr()
    main(["doctor", "--offline", "-c", str(path)])
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "database and" in x]
    assert line.startswith("✓")
    assert "schema current" in line
    assert f"thalos-bot schedules cancel {schedule_id}" in out, "a stored schedule is read"
    assert not (tmp_path / "state" / "thalos.db").exists(), "no SQLite state was made"


def test_media_prune_on_the_shared_store(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        f'state_dir = "state"\n[storage]\nurl = "{postgres_url}"\n[media]\nretention = "7d"\n',
        encoding="utf-8",
    )

    async def fill() -> tuple[str, str]:
        async with open_stores(load_settings(path)) as stores:
            assert isinstance(stores.shared, PgDatabase)
            aged = PgMediaStore(stores.shared, lambda: NOW - timedelta(days=8))
            old = await aged.put(b"x" * 1500, "image/jpeg", kind="image", origin="t:9")
            return old, await stores.media.put(b"new", "image/png", kind="image")

    async def stored(hashes: list[str]) -> set[str]:
        async with open_stores(load_settings(path)) as stores:
            return set(await stores.media.get_many(hashes))

    digest, kept = anyio.run(fill)
    capsys.readouterr()
    assert main(["media", "prune", "--dry-run", "-c", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"would remove {digest[:16]} image/jpeg (image), 1.5 kB, last sent ")
    assert anyio.run(stored, [digest, kept]) == {digest, kept}
    assert main(["media", "prune", "-c", str(path)]) == 0
    assert (
        capsys.readouterr()
        .out.splitlines()[-1]
        .startswith("removed 1 item, freed 1.5 kB (1,500 bytes)")
    )
    assert anyio.run(stored, [digest, kept]) == {kept}
    assert not (tmp_path / "state" / "thalos.db").exists(), "no SQLite state was made"


def test_memory_list_show_export_add_and_forget_on_the_shared_store(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        f'state_dir = "state"\n[storage]\nurl = "{postgres_url}"\n'
        '[memory.embeddings]\nmode = "off"\n',
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main(["memory", "add", "Prefers green tea", "--owner", "alice", "-c", str(path)]) == 0
    added = capsys.readouterr().out
    assert added.startswith("added m-")
    record_id = added.split()[1]
    assert main(["memory", "list", "-c", str(path)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split() == ["ID", "OWNER", "KIND", "UPDATED", "TEXT"]
    assert listed[1].startswith(f"{record_id}  alice")
    assert listed[1].endswith("Prefers green tea")
    assert main(["memory", "show", record_id, "-c", str(path)]) == 0
    assert "Prefers green tea" in capsys.readouterr().out
    assert main(["memory", "search", "tea", "--owner", "alice", "-c", str(path)]) == 0
    found = capsys.readouterr().out.splitlines()
    assert found[0].startswith("score   id  (recalled for alice")
    assert found[1].split()[1] == record_id
    assert main(["memory", "search", "tea", "--owner", "bob", "-c", str(path)]) == 0
    assert capsys.readouterr().out.startswith("nothing recalled for 'tea'"), "alice's only"
    assert main(["memory", "export", "-c", str(path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["text"] == "Prefers green tea"
    assert main(["memory", "forget", record_id, "--yes", "-c", str(path)]) == 0
    assert "run `VACUUM memories`" in capsys.readouterr().out
    assert main(["memory", "list", "-c", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "no memories"
    assert not (tmp_path / "state" / "thalos.db").exists(), "no SQLite state was made"


def test_skills_sync_and_list_use_the_replicas_own_file(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, postgres_url)
    folder = tmp_path / "skills" / "triage"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: triage\ndescription: Sort issues.\n---\nSort them.\n", encoding="utf-8"
    )
    assert main(["skills", "sync", "-c", str(path)]) == 0
    capsys.readouterr()
    assert main(["skills", "list", "-c", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  triage  active  skills/triage/SKILL.md" in out
    assert (tmp_path / "state" / "local.sqlite3").exists(), "where the daemon keeps them"
    assert not (tmp_path / "state" / "thalos.db").exists(), "no SQLite state was made"


def test_memory_reindex_on_the_shared_store(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, postgres_url)  # the default embedder (local, offline)
    assert main(["memory", "add", "Prefers tea", "--owner", "alice", "-c", str(path)]) == 0
    capsys.readouterr()
    assert main(["memory", "reindex", "--pending-only", "--quiet", "-c", str(path)]) == 0
    assert "embedded 0 memories with wordllama/" in capsys.readouterr().out, "add embedded it"
    assert main(["memory", "reindex", "--quiet", "-c", str(path)]) == 0
    assert "embedded 1 memories with wordllama/" in capsys.readouterr().out
    assert (tmp_path / "state" / "local.sqlite3").exists(), "its progress row, kept locally"
    assert not (tmp_path / "state" / "thalos.db").exists(), "no SQLite state was made"


FACT = "Alice's bike lock code is 5512"


async def seed_history(path: Path) -> str:
    """Two sessions on the shared store: one says the fact (its summary covering it),
    the other's summary restates it; then the fact is remembered."""
    async with open_stores(load_settings(path)) as stores:
        assert isinstance(stores.shared, PgDatabase)
        async with stores.shared.transaction() as conn:
            for session in ("s1", "s2"):
                await conn.execute(
                    "INSERT INTO sessions (id, agent_id, owner, status, created_at, updated_at)"
                    " VALUES (%s, 'assistant', 'alice', 'open', now(), now())",
                    (session,),
                )
            for seq, said in enumerate(["Hello.", f"Remember: {FACT}.", "Bikes are fun."]):
                await conn.execute(
                    "INSERT INTO session_messages (session_id, seq, role, content)"
                    " VALUES ('s1', %s, 'user', %s)",
                    (seq, message_to_json(Message.user(said))),
                )
            await conn.execute(
                "INSERT INTO session_context (session_id, summary, summary_until)"
                " VALUES ('s1', 'The user talked about bikes.', 3), ('s2', %s, 0)",
                (f"Summary: {FACT}.",),
            )
        stored = await stores.memory(stores_settings(path), NO_EMBEDDER).store.remember(
            "alice", FACT
        )
        return stored.record.id


def test_memory_forget_everywhere_on_the_shared_store(
    tmp_path: Path,
    postgres_url: str,
    postgres_schema: PostgresSchema,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        f'state_dir = "state"\n[storage]\nurl = "{postgres_url}"\n'
        '[memory.embeddings]\nmode = "off"\n',
        encoding="utf-8",
    )
    record_id = anyio.run(seed_history, path)
    capsys.readouterr()
    forget = ["memory", "forget", record_id, "--everywhere", "--yes", "--quiet"]
    assert main([*forget, "-c", str(path)]) == 0
    out = capsys.readouterr().out
    assert "redacted 1 stored message(s) in 1 session(s); reset 2 compaction summary" in out
    assert "`VACUUM memories, session_messages, session_context`" in out
    assert "5512" not in postgres_schema.sql("SELECT content FROM session_messages")
    assert "[forgotten]" in postgres_schema.sql("SELECT content FROM session_messages")
    summaries = postgres_schema.sql("SELECT summary_until, summary FROM session_context")
    assert "5512" not in summaries
    assert "bikes" not in summaries, "a summary built over the redacted turn is reset too"
