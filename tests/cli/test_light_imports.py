"""The one-shot commands load only what they use: none of them imports a model's SDK,
MCP, numpy, the PDF reader, OpenTelemetry, the web server, the PostgreSQL driver (for
a SQLite state) or the console's full-screen prompt, which only the daemon, ``chat``
and ``tools`` need. ``chat`` itself loads the MCP SDK only when an MCP server starts,
and the prompt only at a terminal. Each runs in a fresh interpreter, as a user runs
it; the modules loaded when it ends are compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "anthropic",
    "openai",
    "mcp",
    "mcp_types",
    "numpy",
    "pypdf",
    "opentelemetry",
    "starlette",
    "uvicorn",
    "psycopg",
    "psycopg_pool",
    "prompt_toolkit",
)
"""Top-level packages a light command must not load."""

UNUSED_BY_CHAT = ("mcp", "mcp_types", "prompt_toolkit")
"""What ``chat`` with no MCP server configured and piped input does not need: the MCP
SDK and the interactive prompt (the model's SDKs, numpy and the PDF reader it may)."""

PROBE = """
import json, runpy, sys
into, sys.argv = sys.argv[1], ["thalos-bot", *sys.argv[2:]]
try:
    runpy.run_module("thalos_bot", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
with open(into, "w", encoding="utf-8") as out:
    json.dump(sorted(sys.modules), out)
"""
"""Runs ``thalos-bot`` as ``python -m thalos_bot`` does, then writes the names of the
modules loaded to the file its first argument names."""

LIGHT = [
    ["check"],
    ["people"],
    ["schedules", "list"],
    ["skills", "list"],
    ["doctor", "--offline"],
    ["status"],
]


def modules_after(tmp_path: Path, words: list[str]) -> set[str]:
    """The modules imported by ``thalos-bot WORDS`` by the time it exits."""
    (tmp_path / "bot.toml").write_text('[provider]\nkind = "scripted"\n', encoding="utf-8")
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *words],
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.exists(), done.stderr
    return set(json.loads(out.read_text(encoding="utf-8")))


def loaded_by(tmp_path: Path, words: list[str]) -> set[str]:
    """The top-level packages imported by ``thalos-bot WORDS`` by the time it exits."""
    return {name.split(".")[0] for name in modules_after(tmp_path, words)}


@pytest.mark.parametrize("words", LIGHT, ids=" ".join)
def test_a_light_command_loads_no_heavy_library(tmp_path: Path, words: list[str]) -> None:
    loaded = loaded_by(tmp_path, words)
    assert "thalos_bot" in loaded  # the command really ran
    assert sorted(loaded & set(HEAVY)) == []


def test_chat_without_mcp_servers_loads_no_mcp_sdk_and_no_prompt(tmp_path: Path) -> None:
    modules = modules_after(tmp_path, ["chat", "--offline"])
    # The host started and the console read the (empty) piped input.
    assert {"thalos_bot.service.host", "thalos_bot.console.source"} <= modules
    loaded = {name.split(".")[0] for name in modules}
    assert sorted(loaded & set(UNUSED_BY_CHAT)) == []
