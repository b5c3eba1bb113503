"""The one-shot commands load only what they use: none of them imports a model's SDK,
MCP, numpy, the PDF reader, OpenTelemetry or the web server, which only the daemon,
``chat`` and ``tools`` need. Each runs in a fresh interpreter, as a user runs it; the
modules loaded when it ends are compared."""

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
    "numpy",
    "pypdf",
    "opentelemetry",
    "starlette",
    "uvicorn",
)
"""Top-level packages a light command must not load."""

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


def loaded_by(tmp_path: Path, words: list[str]) -> set[str]:
    """The top-level packages imported by ``thalos-bot WORDS`` by the time it exits."""
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
    return {name.split(".")[0] for name in json.loads(out.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("words", LIGHT, ids=" ".join)
def test_a_light_command_loads_no_heavy_library(tmp_path: Path, words: list[str]) -> None:
    loaded = loaded_by(tmp_path, words)
    assert "thalos_bot" in loaded  # the command really ran
    assert sorted(loaded & set(HEAVY)) == []
