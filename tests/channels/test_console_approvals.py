"""Tool approvals at the console: under a pty the prompt asks; piped input never approves."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped, start_chat
from tests.fakes.anthropic_api import AnthropicFake, tool_use_reply
from tests.tools.conftest import TEST_SERVER, read_record
from tests.tools.test_end_to_end import answer_with_result, tool_result_of

pytestmark = pytest.mark.slow

KEY = {"ANTHROPIC_API_KEY": "sk-ant-test-key"}
QUESTION = 'Allow calc__record {"note": "hello"}? [y]es / [s]ession / [N]o'


def configure(tmp_path: Path, fake: AnthropicFake, record: Path) -> None:
    (tmp_path / "bot.toml").write_text(
        f"""
state_dir = "state"
[provider]
base_url = "{fake.base_url}"
max_retries = 0

[[mcp_servers]]
name = "calc"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(TEST_SERVER))}]
env = {{ MCP_TEST_RECORD = {json.dumps(str(record))} }}

[[tool_policies]]
tool = "calc__record"
action = "ask"
""",
        encoding="utf-8",
    )


def start(tmp_path: Path) -> PtySession:
    return start_chat(tmp_path, KEY)


def after(typed: str, wanted: str) -> Callable[[str], bool]:
    """True once ``wanted`` shows after the last echo of the line ``typed``."""
    return lambda out: typed in out and wanted in out.rsplit(typed, 1)[-1]


def wait_idle(session: PtySession) -> None:
    """Until ``/status`` says the last turn is over. Its answer shows a moment before the
    pump lets the conversation go, and a line typed in between gets "still working"."""
    for _ in range(50):
        session.send("/status\r")
        session.read_until(lambda out: "State:" in out.rsplit("/status", 1)[-1])
        if "State: idle" in session.visible.rsplit("/status", 1)[-1]:
            return
    raise AssertionError("the turn never finished")


def test_approve_once_then_for_the_session(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with AnthropicFake() as fake:
        for _ in range(3):
            fake.enqueue(tool_use_reply("calc__record", {"note": "hello"}))
            fake.enqueue(answer_with_result)
        configure(tmp_path, fake, record)
        session = start(tmp_path)
        try:
            session.send("write it\r")
            session.read_until(after("write it", QUESTION))
            session.send("y\r")
            session.read_until(after("write it", "The tool said"))
            wait_idle(session)
            session.send("again\r")
            session.read_until(after("again", QUESTION))
            session.send("s\r")
            session.read_until(after("again", "The tool said"))
            wait_idle(session)
            session.send("and once more\r")
            session.read_until(after("and once more", "The tool said"))
            wait_idle(session)  # Ctrl-D at the prompt, as after every other answer
            session.send_eof()
            assert session.close() == 0
        except BaseException:
            session.process.kill()
            session.close()
            raise
    assert QUESTION not in session.visible.rsplit("and once more", 1)[-1], "not asked again"
    assert "calc__record: approved for this session" in session.visible
    assert len([r for r in read_record(record) if r.get("tool") == "record"]) >= 3


def test_deny_then_cancel_while_waiting(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with AnthropicFake() as fake:
        fake.enqueue(tool_use_reply("calc__record", {"note": "hello"}))
        fake.enqueue(answer_with_result)
        fake.enqueue(tool_use_reply("calc__record", {"note": "hello"}))
        configure(tmp_path, fake, record)
        session = start(tmp_path)
        try:
            session.send("write it\r")
            session.read_until(after("write it", QUESTION))
            session.send("n\r")
            session.read_until(after("write it", "The tool said"))
            wait_idle(session)
            session.send("try again\r")
            session.read_until(after("try again", QUESTION))
            session.send("/status\r")
            session.read_until(after("/status", "Waiting for your approval of calc__record"))
            session.send("/cancel\r")
            session.read_until(after("/cancel", "[cancelled]"))
            session.read_until(lambda out: "›" in out.split("[cancelled]")[-1])
            session.send_eof()
            assert session.close() == 0
        except BaseException:
            session.process.kill()
            session.close()
            raise
        denial = tool_result_of(fake.requests[1].body)
        assert denial["is_error"] is True
        assert "did not approve" in json.dumps(denial)
        assert len(fake.requests) == 3, "the cancelled turn never went back to the model"
    assert "withdrawn, not run" in session.visible
    assert [r for r in read_record(record) if r.get("tool") == "record"] == []


def test_piped_input_never_approves(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with AnthropicFake() as fake:
        fake.enqueue(tool_use_reply("calc__record", {"note": "hello"}))
        fake.enqueue(answer_with_result)
        configure(tmp_path, fake, record)
        result = run_piped(["chat"], "write it\n", cwd=tmp_path, env=KEY)
        assert result.returncode == 0, result.stderr
        refusal = tool_result_of(fake.requests[1].body)
        assert "nobody to ask" in json.dumps(refusal)
    assert "Allow calc__record" not in result.stdout
    assert [r for r in read_record(record) if r.get("tool") == "record"] == []
