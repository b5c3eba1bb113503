"""``thalos-bot people`` and ``check`` name every person and identity, and whom each
allowed user no person lists runs as."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.pricing import ModelPrice, ModelUsages, PriceTable
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.links import SqlitePeopleLinks
from thalos_bot.storage.run_costs import SqliteRunCosts
from thalos_bot.storage.usage import SqliteUsageLedger

CONFIG = """
[provider]
kind = "scripted"
[[people]]
id = "ana"
name = "Ana"
roles = ["admin"]
identities = { telegram = [4242] }
terminal = true
[[people]]
id = "ben"
identities = { telegram = [5151, 6000] }
[channels.console]
enabled = false
[channels.telegram]
enabled = true
allowed_user_ids = [9999, 4242, 5151, 7777]
roles = ["files"]
"""


def thalos(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thalos_bot", *args, "--config", str(tmp_path / "bot.toml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"TELEGRAM_BOT_TOKEN": "1:x", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )


def test_people_lists_each_person_and_whom_the_unlisted_run_as(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(CONFIG, encoding="utf-8")
    done = thalos(tmp_path, "people")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "people (2):"
    assert "  ana (Ana): roles admin; identities: telegram 4242, terminal" in lines
    assert "  ben (ben): roles none; identities: telegram 5151, telegram 6000" in lines
    assert any("telegram 6000 is not an allowed user" in line for line in lines)
    assert (
        "  telegram, allowed but not listed: 9999 as owner (roles files); "
        "7777 as telegram:7777 (roles none)"
    ) in lines
    check = thalos(tmp_path, "check")
    assert check.returncode == 0, check.stderr
    assert "  ana (Ana): roles admin; identities: telegram 4242, terminal" in check.stdout


def test_an_identity_claimed_twice_fails_check_with_the_key(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(
        CONFIG.replace("[5151, 6000]", "[5151, 4242]"), encoding="utf-8"
    )
    done = thalos(tmp_path, "check")
    assert done.returncode != 0
    assert "people[1].identities.telegram: '4242' is already people[0]'s (ana)" in done.stderr
    assert "Traceback" not in done.stderr


LINKING = """
state_dir = "state"
[provider]
kind = "scripted"
[channels.console]
enabled = true
"""


async def _issue(database: Path, code: str) -> None:
    async with await Database.open(database, migrations=ALL_MIGRATIONS) as db:
        await SqlitePeopleLinks(db).issue("owner", code, datetime.now(UTC) + timedelta(minutes=10))


def test_the_terminal_links_with_a_code_and_unlinks(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(LINKING, encoding="utf-8")
    (tmp_path / "state").mkdir()
    anyio.run(_issue, tmp_path / "state" / "thalos.db", "ABCD-EFGH")
    linked = thalos(tmp_path, "people", "link", "abcd-efgh")
    assert linked.returncode == 0, linked.stderr
    assert linked.stdout.strip() == "Linked: the terminal is now 'owner'."
    again = thalos(tmp_path, "people", "link", "ABCD-EFGH")
    assert again.returncode == 1
    assert "unknown, used or expired" in again.stderr
    listing = thalos(tmp_path, "people")
    assert "  console console as owner (since " in listing.stdout
    ended = thalos(tmp_path, "people", "unlink", "console", "console")
    assert ended.returncode == 0, ended.stderr
    assert "linked from a chat (/link): none" in thalos(tmp_path, "people").stdout


async def _spent(database: Path) -> None:
    async with await Database.open(database, migrations=ALL_MIGRATIONS) as db:
        ledger = SqliteUsageLedger(db)
        await ledger.add("ana", "2026-06-01", TokenUsage(1_000, 200), 0.5)
        await ledger.add("ana", "2026-06-02", TokenUsage(300, 0), 0.1)
        await ledger.add("ben", "2026-06-02", TokenUsage(50, 50), 0.0)


def test_spend_reports_each_person_over_a_range(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(
        LINKING + '[limits]\ndaily_tokens = 5000\n[[people]]\nid = "ben"\ndaily_tokens = 900\n',
        encoding="utf-8",
    )
    (tmp_path / "state").mkdir()
    anyio.run(_spent, tmp_path / "state" / "thalos.db")
    text = thalos(tmp_path, "spend", "--from", "2026-06-01", "--to", "2026-06-02")
    assert text.returncode == 0, text.stderr
    assert "  ana: 1,500 tokens, about $0.60, 2 turns (daily limit 5,000 tokens)" in text.stdout
    assert "  ben: 100 tokens, about $0.00, 1 turns (daily limit 900 tokens)" in text.stdout
    one = thalos(tmp_path, "spend", "--from", "2026-06-02", "--to", "2026-06-02", "--json")
    report = json.loads(one.stdout)
    assert report["people"]["ana"]["tokens"] == 300
    assert report["people"]["ben"]["daily_tokens"] == 900
    bad = thalos(tmp_path, "spend", "--from", "June")
    assert bad.returncode == 1
    assert "--from: 'June' is not a day like 2026-12-01" in bad.stderr


async def _spent_by_agent(database: Path) -> None:
    async with await Database.open(database, migrations=ALL_MIGRATIONS) as db:
        ledger = SqliteUsageLedger(db)
        prices = PriceTable({"big": ModelPrice(10.0, 10.0, 0, 0)})
        limits = SpendingLimits(
            ledger, prices, clock=lambda: datetime(2026, 6, 2, 9, 0, tzinfo=UTC)
        )
        for who, agent, model, tokens in (
            ("ana", "coder", "big", 100_000),
            ("ben", "coder", "small", 500),
            ("ben", "helper", "small", 70),
        ):
            spend = limits.spend(who, ModelUsages().add(model, TokenUsage(tokens)), agent=agent)
            assert spend is not None
            await ledger.record(spend)


def test_spend_reports_by_agent_and_by_model(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(LINKING, encoding="utf-8")
    (tmp_path / "state").mkdir()
    anyio.run(_spent_by_agent, tmp_path / "state" / "thalos.db")
    june = ("--from", "2026-06-01", "--to", "2026-06-30")
    agents = thalos(tmp_path, "spend", *june, "--by", "agent")
    assert agents.returncode == 0, agents.stderr
    assert agents.stdout.splitlines() == [
        "Spent from 2026-06-01 to 2026-06-30, by agent:",
        "  coder: 100,500 tokens, about $1.00, 2 turns",
        "  helper: 70 tokens, about $0.00, 1 turns",
    ]
    models = thalos(tmp_path, "spend", *june, "--by", "model", "--json")
    report = json.loads(models.stdout)
    assert report["models"]["big"] == {"tokens": 100_000, "cost_usd": 1.0, "turns": 1}
    assert report["models"]["small"]["tokens"] == 570


async def _ran(database: Path) -> None:
    async with await Database.open(database, migrations=ALL_MIGRATIONS) as db:
        costs = SqliteRunCosts(db)
        await costs.record("news", 400, datetime(2026, 6, 2, 9, 0, tzinfo=UTC), 0.5)
        await costs.record("news", 300, datetime(2026, 6, 3, 9, 0, tzinfo=UTC), 0.25)
        await costs.record("backup", 50, datetime(2026, 6, 2, 23, 30, tzinfo=UTC))
        await costs.record("news", 999, datetime(2026, 7, 1, 0, 0, tzinfo=UTC), 9.0)


def test_spend_reports_by_schedule(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(LINKING, encoding="utf-8")
    (tmp_path / "state").mkdir()
    anyio.run(_ran, tmp_path / "state" / "thalos.db")
    june = ("--from", "2026-06-01", "--to", "2026-06-30")
    report = thalos(tmp_path, "spend", *june, "--by", "schedule")
    assert report.returncode == 0, report.stderr
    assert report.stdout.splitlines() == [
        "Spent from 2026-06-01 to 2026-06-30, by schedule:",
        "  backup: 50 tokens, about $0.00, 1 runs",
        "  news: 700 tokens, about $0.75, 2 runs",
    ]
