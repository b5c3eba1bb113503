"""The operator's ``memory`` command against a configured database: once as a process
(its ``python -m`` entry), the rest through the same ``main`` in this process (a
process each would spend most of a second importing before it began)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.in_process import run_main
from thalos_bot.cli.cmd_memory import main

pytestmark = pytest.mark.slow

Run = Callable[..., subprocess.CompletedProcess[str]]


def as_process(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THALOS_BOT")}
    return subprocess.run(
        [sys.executable, "-m", "thalos_bot.cli.cmd_memory", "memory", *args, "-c", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.fixture
def memory(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """``memory <args> -c <config>`` through ``main``, its output and exit code as a
    process's would be."""
    for name in list(os.environ):
        if name.startswith("THALOS_BOT"):
            monkeypatch.delenv(name)

    def run(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return run_main(main, ["memory", *args, "-c", str(config)], capsys)

    return run


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text('state_dir = "state"\n')
    return path


def test_add_list_show_export_and_hard_forget(config: Path, memory: Run) -> None:
    empty = as_process(config, "list")
    assert empty.returncode == 0
    assert "no database" in empty.stderr
    added = as_process(config, "add", "Prefers tea", "--owner", "alice", "--kind", "preference")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added m-")
    memory(config, "add", "Deploys happen on Tuesdays", "--owner", "project", "--tag", "ops")
    memory(config, "add", "Bob's bike lock code is 1234", "--owner", "bob")

    listed = memory(config, "list")
    assert listed.returncode == 0
    assert [line.split()[1] for line in listed.stdout.splitlines()[1:]] == [
        "bob",
        "project",
        "alice",
    ]
    only_alice = memory(config, "list", "--owner", "alice").stdout
    assert "Prefers tea" in only_alice
    assert "bob" not in only_alice

    exported = [
        json.loads(line)
        for line in memory(config, "export", "--owner", "alice").stdout.splitlines()
    ]
    assert [(r["owner"], r["text"], r["kind"]) for r in exported] == [
        ("alice", "Prefers tea", "preference")
    ]
    everything = memory(config, "export").stdout.splitlines()
    assert len(everything) == 3
    record_id = exported[0]["id"]

    shown = memory(config, "show", record_id)
    assert shown.returncode == 0
    assert "owner: alice" in shown.stdout
    assert shown.stdout.rstrip().endswith("Prefers tea")

    assert memory(config, "show", record_id, "--owner", "bob").returncode == 1
    wrong_owner = memory(config, "forget", record_id, "--owner", "bob")
    assert wrong_owner.returncode == 1
    assert memory(config, "forget", record_id).returncode == 0
    assert memory(config, "show", record_id).returncode == 1
    assert memory(config, "export", "--owner", "alice").stdout == ""
    assert len(memory(config, "export").stdout.splitlines()) == 2


def test_bad_input_is_reported_not_raised(config: Path, memory: Run) -> None:
    bad = memory(config, "add", "x", "--owner", "alice", "--importance", "9")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: importance must be")
    unknown = memory(config, "show", "m-000000000000")
    assert unknown.returncode == 1


def test_reindex_embeds_what_add_stored(config: Path, tmp_path: Path, memory: Run) -> None:
    assert memory(config, "add", "Prefers tea", "--owner", "alice").returncode == 0
    pending = memory(config, "reindex", "--pending-only")
    assert pending.returncode == 0, pending.stderr
    assert "embedded 0 memories with wordllama/l2_supercat/256; 0 pending" in pending.stdout
    everything = memory(config, "reindex")
    assert "embedded 1 memories" in everything.stdout

    off = tmp_path / "off.toml"
    off.write_text('state_dir = "state"\n[memory.embeddings]\nmode = "off"\n')
    assert "nothing to do" in memory(off, "reindex").stdout


def test_reindex_with_an_unreachable_endpoint_says_what_is_left(
    tmp_path: Path, memory: Run
) -> None:
    config = tmp_path / "bot.toml"
    config.write_text(
        'state_dir = "state"\n[memory.embeddings]\nmode = "endpoint"\n'
        'base_url = "http://127.0.0.1:9/v1"\nmodel = "text-embedding-3-small"\n'
    )
    added = memory(config, "add", "Prefers tea", "--owner", "alice")
    assert added.returncode == 0, added.stderr
    failed = memory(config, "reindex", "--pending-only")
    assert failed.returncode == 1
    assert "1 memories are still waiting for a vector" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_search_shows_what_recall_would_bring_with_scores(tmp_path: Path, memory: Run) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        'state_dir = "state"\n[memory]\nshared_owner = "project"\n'
        '[memory.embeddings]\nmode = "off"\n'
    )
    memory(path, "add", "Prefers green tea in the morning", "--owner", "alice")
    memory(path, "add", "Deploys happen on Tuesdays", "--owner", "project")
    memory(path, "add", "Bob drinks tea too", "--owner", "bob")
    found = memory(path, "search", "tea", "--owner", "alice")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0].startswith("score   id  (recalled for alice, project")
    assert len(lines) == 2, "bob's memory is not alice's to recall"
    score, record_id = lines[1].split()[:2]
    float(score)  # a number
    assert record_id.startswith("m-")
    assert "[alice, " in lines[1]
    assert lines[1].endswith("Prefers green tea in the morning")
    nothing = memory(path, "search", "bicycles", "--owner", "alice")
    assert nothing.stdout.startswith("nothing recalled for 'bicycles'")
