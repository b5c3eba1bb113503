"""``thalos-bot doctor``: every check reports, failures make the exit code non-zero."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from tests.fakes import openai_api as compat
from tests.fakes.anthropic_api import AnthropicFake, api_error, text_reply
from tests.fakes.openai_api import VLLM, FakeModel, OpenAIFake
from thalos_bot.channels.checks import Check
from thalos_bot.cli.main import main
from thalos_bot.service.doctor import run_doctor

pytestmark = pytest.mark.anyio


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text('state_dir = "state"\n' + text, encoding="utf-8")
    return path


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


async def test_a_healthy_offline_setup_passes(tmp_path: Path) -> None:
    checks = by_name(
        await run_doctor(write(tmp_path, '[provider]\nkind = "scripted"\n'), offline=True)
    )
    assert all(c.outcome != "fail" for c in checks.values()), checks
    assert checks["Anthropic endpoint answers"].outcome == "skip"
    assert "will be created" in checks["database and migrations"].detail


async def test_an_invalid_config_stops_at_the_first_check(tmp_path: Path) -> None:
    checks = await run_doctor(write(tmp_path, "[pump]\nflush = 1\n"), offline=True)
    assert [c.outcome for c in checks] == ["fail"]
    assert "pump.flush: unknown key" in checks[0].detail


async def test_missing_key_and_mcp_variables_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    config = write(
        tmp_path,
        '[[mcp_servers]]\nname = "gh"\nenabled = false\ncommand = "x"\n'
        '[[mcp_servers]]\nname = "fs"\ncommand = "/no/such/binary"\n'
        'env = { TOKEN = "${GITHUB_TOKEN}" }\n',
    )
    checks = by_name(await run_doctor(config, offline=True))
    assert checks["ANTHROPIC_API_KEY is set"].outcome == "fail"
    assert checks["GITHUB_TOKEN is set"].detail == "not set (needed by MCP server fs)"
    assert checks["MCP server fs"].outcome == "fail"
    assert checks["MCP server gh"].outcome == "skip"


async def test_the_anthropic_endpoint_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test")
    with AnthropicFake() as fake:
        config = write(tmp_path, f'[provider]\nbase_url = "{fake.base_url}"\nmax_retries = 0\n')
        fake.enqueue(text_reply("pong"))
        fine = by_name(await run_doctor(config, offline=False))
        fake.enqueue(api_error(401, "authentication_error"))
        refused = by_name(await run_doctor(config, offline=False))
        assert fake.requests[0].body["max_tokens"] == 1
    assert fine["Anthropic endpoint answers"].outcome == "ok"
    assert refused["Anthropic endpoint answers"].outcome == "fail"
    assert "ANTHROPIC_API_KEY" in refused["Anthropic endpoint answers"].detail


async def test_a_database_from_a_newer_version_fails(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as conn:
        conn.execute("CREATE TABLE schema_migrations (name TEXT, applied_at TEXT)")
        conn.execute("INSERT INTO schema_migrations VALUES ('9999_future', '2030-01-01')")
    checks = by_name(
        await run_doctor(write(tmp_path, '[provider]\nkind = "scripted"\n'), offline=True)
    )
    assert checks["database and migrations"].outcome == "fail"
    assert "9999_future" in checks["database and migrations"].detail


async def test_an_empty_database_file_fails_as_run_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "thalos.db").write_bytes(b"")
    checks = by_name(
        await run_doctor(write(tmp_path, '[provider]\nkind = "scripted"\n'), offline=True)
    )
    assert checks["database and migrations"].outcome == "fail"
    assert "empty (0 bytes)" in checks["database and migrations"].detail


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, '[provider]\nkind = "scripted"\n')
    assert main(["doctor", "--offline", "--config", str(good)]) == 0
    out = capsys.readouterr().out
    assert "✓ configuration" in out
    assert "All checks passed" in out
    bad = tmp_path / "other.toml"
    bad.write_text('state_dir = "state"\n')
    assert main(["doctor", "--offline", "--config", str(bad)]) == 1
    assert "✗ ANTHROPIC_API_KEY is set" in capsys.readouterr().out


async def test_each_named_provider_is_asked_and_its_window_said(tmp_path: Path) -> None:
    with OpenAIFake(dialect=VLLM, model=FakeModel(context_window=32768)) as fake:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed = sock.getsockname()[1]
        config = write(
            tmp_path,
            f'[[providers]]\nid = "local"\nkind = "openai"\nmodel = "{fake.model.name}"\n'
            f'base_url = "{fake.base_url}"\nmax_retries = 0\n'
            '[[providers]]\nid = "spare"\nkind = "openai"\nmodel = "m"\nmax_retries = 0\n'
            f'base_url = "http://127.0.0.1:{closed}/v1"\n'
            '[[agents]]\nid = "a"\nname = "A"\nprovider = "local"\nfallback = ["spare"]\n',
        )
        fake.enqueue(compat.reply(compat.text("pong")))
        checks = by_name(await run_doctor(config, offline=False))
    local = checks["provider local (openai, qwen3:8b) answers"]
    assert local.outcome == "ok", local
    assert "context window 32,768 (from the server)" in local.detail
    spare = checks["provider spare (openai, m) answers"]
    assert (spare.outcome, spare.detail) == ("fail", "Could not reach the model server (spare).")
    assert checks["Anthropic endpoint answers"].outcome == "skip", "no agent uses [provider]"
    assert "ANTHROPIC_API_KEY is set" not in checks
