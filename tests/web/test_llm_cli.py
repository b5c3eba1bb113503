"""A second, independent client of the OpenAI-compatible API: the ``llm`` CLI, with the
daemon's agent configured as an OpenAI-compatible model in its
``extra-openai-models.yaml`` (as docs/api.md shows). Streamed with usage, then whole with
``-c``, which sends the conversation again: the daemon's session already has its start,
so the model is not sent it twice."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import AnthropicFake, FakeUsage, text_reply
from tests.web.harness import WebDaemon, web_daemon
from tests.web.test_openai_api import last_user_texts, make_key

LLM = Path(__file__).parents[2] / ".venv" / "bin" / "llm"


@pytest.fixture(scope="module")
def api_daemon(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[WebDaemon, AnthropicFake]]:
    with (
        AnthropicFake() as anthropic,
        web_daemon(tmp_path_factory.mktemp("api-llm"), anthropic.base_url, "api = true") as d,
    ):
        yield d, anthropic


@pytest.fixture
def llm_home(api_daemon: tuple[WebDaemon, AnthropicFake], tmp_path: Path) -> Path:
    if not LLM.exists():
        if os.environ.get("CI"):
            pytest.fail("CI must have the llm CLI (the dev group installs it)")
        pytest.skip("the llm CLI is not installed (python3 dev.py setup installs it)")
    daemon, _ = api_daemon
    models = f"""- model_id: thalos
  model_name: assistant
  api_base: "{daemon.url}/v1"
  api_key_name: thalos
"""
    (tmp_path / "extra-openai-models.yaml").write_text(models, encoding="utf-8")
    key = make_key(daemon, "--person", "p1")
    (tmp_path / "keys.json").write_text(json.dumps({"thalos": key}), encoding="utf-8")
    return tmp_path


def llm(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LLM), *args],
        env={"LLM_USER_PATH": str(home), "HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_llm_streams_with_usage_and_continues_the_conversation(
    api_daemon: tuple[WebDaemon, AnthropicFake], llm_home: Path
) -> None:
    _, anthropic = api_daemon
    anthropic.enqueue(
        text_reply("Streamed ", "from the agent.", usage=FakeUsage(40, 6)),
        text_reply("Whole, and it remembers."),
    )
    streamed = llm(llm_home, "prompt", "-m", "thalos", "--usage", "Say hello.")
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout.strip() == "Streamed from the agent."
    assert "40 input, 6 output" in streamed.stderr
    whole = llm(llm_home, "prompt", "-c", "--no-stream", "And again?")
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.strip() == "Whole, and it remembers."
    said = last_user_texts(anthropic)
    assert said.count("Say hello.") == 1  # the session had it; -c's resend not added again
    assert said[-1] == "And again?"
