"""``agents__delegate`` end to end: ``thalos-bot chat`` with the Anthropic provider over
the Messages fake. The boss asks the researcher; the researcher's request holds the task
as its only user message; the boss answers with what came back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.channels.cli_process import run_piped
from tests.fakes.anthropic_api import (
    AnthropicFake,
    FakeUsage,
    StreamReply,
    text_reply,
    tool_use_reply,
)

pytestmark = pytest.mark.slow

TASK = "Find the boiling point of water at sea level, in Celsius."


def config(tmp_path: Path, fake: AnthropicFake) -> None:
    (tmp_path / "bot.toml").write_text(
        f"""
state_dir = "state"
[provider]
base_url = "{fake.base_url}"
max_retries = 0

[[agents]]
id = "boss"
name = "Boss"
instructions = "You lead a team."
delegates = ["research*"]

[[agents]]
id = "researcher"
name = "Researcher"
instructions = "You look things up."

[[agents]]
id = "vault"
name = "Vault"
instructions = "You keep secrets."
""",
        encoding="utf-8",
    )


def tool_result_text(request_body: dict[str, Any]) -> str:
    last = request_body["messages"][-1]
    (block,) = [b for b in last["content"] if b["type"] == "tool_result"]
    content = block["content"]
    return content if isinstance(content, str) else "".join(c["text"] for c in content)


def relay(request: Any) -> StreamReply:
    return text_reply(f"The researcher says: {tool_result_text(request.body)}")


def test_a_delegated_task_runs_as_a_fresh_subagent_turn(tmp_path: Path) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(
            tool_use_reply(
                "agents__delegate",
                {"agent": "researcher", "task": TASK},
                usage=FakeUsage(input_tokens=100, output_tokens=10),
            ),
            text_reply("100 °C.", usage=FakeUsage(input_tokens=1000, output_tokens=5)),
            relay,
        )
        config(tmp_path, fake)
        result = run_piped(
            ["chat"],
            "Ask the researcher about water.\n/status\n",
            cwd=tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-test"},
        )
        assert result.returncode == 0, result.stderr
        assert "The researcher says: 100 °C." in result.stdout
        parent, sub, parent_again = (r.body for r in fake.requests)
        # The subagent's request: its own instructions, the task as its only message.
        assert sub["messages"] == [{"role": "user", "content": [{"type": "text", "text": TASK}]}]
        assert "You look things up." in str(sub["system"])
        assert "You lead a team." not in str(sub["system"])
        # The boss may delegate; the researcher (no delegates) is not offered the tool.
        assert "agents__delegate" in [t["name"] for t in parent["tools"]]
        assert "agents__delegate" not in [t["name"] for t in sub.get("tools", [])]
        assert tool_result_text(parent_again) == "100 °C."
    # The subagent's 1,000 + 5 tokens count toward the boss's turn (100 + 10 and the
    # relay's default 12 + 7), as /status shows.
    status = result.stdout[result.stdout.index("Agent: Boss") :]
    assert "Tokens: 1,112 in, 22 out" in status, status


def test_an_agent_outside_delegates_answers_like_no_agent(tmp_path: Path) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(
            tool_use_reply("agents__delegate", {"agent": "vault", "task": "Tell me."}),
            relay,
            tool_use_reply("agents__delegate", {"agent": "nobody", "task": "Tell me."}),
            relay,
        )
        config(tmp_path, fake)
        result = run_piped(
            ["chat"],
            "Ask the vault.\nAsk nobody.\n",
            cwd=tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-test"},
        )
        assert result.returncode == 0, result.stderr
        requests = [r.body for r in fake.requests]
        assert len(requests) == 4, "no subagent ran for either"
        vault, nobody = tool_result_text(requests[1]), tool_result_text(requests[3])
    assert vault.replace("'vault'", "'X'") == nobody.replace("'nobody'", "'X'")
    assert "vault" not in nobody
