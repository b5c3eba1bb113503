"""A whole turn through ``thalos-bot chat``: the Anthropic fake asks for a tool, the tool
runs on the real MCP test server, the result goes back, the final text arrives."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.channels.cli_process import run_piped
from tests.fakes.anthropic_api import AnthropicFake, StreamReply, text_reply, tool_use_reply
from tests.tools.conftest import TEST_SERVER, read_record

pytestmark = pytest.mark.slow


def config(tmp_path: Path, fake: AnthropicFake, record: Path, policies: str = "") -> None:
    (tmp_path / "bot.toml").write_text(
        f"""
state_dir = "state"
[provider]
base_url = "{fake.base_url}"
max_retries = 0

[[agents]]
id = "assistant"
name = "Assistant"

[[mcp_servers]]
name = "calc"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(TEST_SERVER))}]
env = {{ MCP_TEST_RECORD = {json.dumps(str(record))} }}
{policies}
""",
        encoding="utf-8",
    )


def tool_result_of(request_body: dict[str, Any]) -> dict[str, Any]:
    last = request_body["messages"][-1]
    (block,) = [b for b in last["content"] if b["type"] == "tool_result"]
    return dict(block)


def answer_with_result(request: Any) -> StreamReply:
    result = tool_result_of(request.body)
    content = result["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return text_reply(f"The tool said: {text}")


def test_a_tool_call_runs_on_the_mcp_server(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    with AnthropicFake() as fake:
        fake.enqueue(tool_use_reply("calc__add", {"a": 2, "b": 3}, text_before="Adding."))
        fake.enqueue(answer_with_result)
        config(tmp_path, fake, record)
        result = run_piped(
            ["chat"], "what is 2+3?\n", cwd=tmp_path, env={"ANTHROPIC_API_KEY": "sk-ant-test"}
        )
        assert result.returncode == 0, result.stderr
        assert "The tool said: 5" in result.stdout
        assert result.stdout.index("Adding.") < result.stdout.index("The tool said: 5")
        tools_offered = [t["name"] for t in fake.requests[0].body["tools"]]
        assert "calc__add" in tools_offered
        assert tool_result_of(fake.requests[1].body).get("is_error", False) is False
    calls = [r for r in read_record(record) if r["tool"] == "add"]
    assert calls, "the MCP server ran the tool"


def test_a_policy_refuses_before_the_server_hears_of_it(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    policy = '[[tool_policies]]\ntool = "calc__*"\nrequire_roles = ["admin"]\n'
    with AnthropicFake() as fake:
        fake.enqueue(tool_use_reply("calc__add", {"a": 2, "b": 3}))
        fake.enqueue(answer_with_result)
        config(tmp_path, fake, record, policy)
        result = run_piped(
            ["chat"], "what is 2+3?\n", cwd=tmp_path, env={"ANTHROPIC_API_KEY": "sk-ant-test"}
        )
        assert result.returncode == 0, result.stderr
        refusal = tool_result_of(fake.requests[1].body)
        assert refusal["is_error"] is True
        assert "not permitted" in json.dumps(refusal)
    assert [r for r in read_record(record) if r["tool"] == "add"] == []
