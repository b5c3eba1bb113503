"""``thalos-bot audit``: the gate's decisions as stored, filtered by --since."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from thalos_bot.cli.cmd_audit import parse_since
from thalos_bot.cli.main import main
from thalos_bot.domain.ids import SessionId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.audit import SqliteAudit
from thalos_bot.storage.database import Database
from thalos_bot.tools.gate import AuditEntry

NOW = datetime.now(UTC)


async def _store(path: Path) -> None:
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        audit = SqliteAudit(db)
        await audit.record(
            AuditEntry(
                NOW - timedelta(days=3),
                SessionId("s_old"),
                "",
                "fs__delete",
                "a" * 64,
                "denied",
                "policy",
            )
        )
        await audit.record(
            AuditEntry(
                NOW - timedelta(minutes=5),
                SessionId("s_new"),
                "telegram:42",
                "fs__write_file",
                "b" * 64,
                "approved",
                "telegram:42",
            )
        )


def test_audit_lists_decisions_since(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bot.toml"
    config.write_text('state_dir = "state"\n', encoding="utf-8")
    (tmp_path / "state").mkdir()
    anyio.run(_store, tmp_path / "state" / "thalos.db")
    capsys.readouterr()  # the migrations' log lines

    assert main(["audit", "-c", str(config)]) == 0
    everything = capsys.readouterr().out.splitlines()
    assert len(everything) == 2
    assert "s_old  fs__delete  denied  by policy  args aaaaaaaaaaaa" in everything[0]
    assert "telegram:42  fs__write_file  approved  by telegram:42" in everything[1]

    assert main(["audit", "--since", "1h", "-c", str(config)]) == 0
    [recent] = capsys.readouterr().out.splitlines()
    assert "fs__write_file" in recent


def test_since_takes_a_time_ago_or_a_date() -> None:
    assert parse_since("24h", NOW) == NOW - timedelta(hours=24)
    assert parse_since("7d", NOW) == NOW - timedelta(days=7)
    assert parse_since("2026-12-01") == datetime(2026, 12, 1, tzinfo=UTC)
    with pytest.raises(argparse.ArgumentTypeError, match="give a time ago"):
        parse_since("yesterday")
