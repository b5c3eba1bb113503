"""The start-up warm-up: what the first turn would load lazily (the memory embedder) is
loaded while the daemon starts, READY waits for it, and a turn that comes during the
warm-up waits for that load instead of loading again."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from structlog.testing import capture_logs

from tests.channels.cli_process import clean_env, command, run_piped
from tests.daemon_config import telegram_daemon_config
from tests.fakes.telegram_api import TelegramFake
from tests.service.test_run_under_systemd import NotifySocket
from thalos_bot.config.models import Settings, build_catalog
from thalos_bot.memory.embedding import wordllama
from thalos_bot.memory.embedding.base import EmbedderError
from thalos_bot.memory.embedding.null import NullEmbedder
from thalos_bot.memory.embedding.wordllama import WordLlamaEmbedder
from thalos_bot.service.warmup import WarmUp, warm_up_plan

USER = 778
RECALLING_AGENT = """
[[agents]]
id = "assistant"
name = "Assistant"
description = "Recalls."
instructions = "You help."
memory = { enabled = true }
"""


def _settings(**values: object) -> Settings:
    return Settings.model_validate(values)


def test_the_plan_loads_the_embedder_when_an_agent_recalls_every_turn() -> None:
    recalling = _settings(
        agents=[{"id": "a", "name": "A", "instructions": "x", "memory": {"enabled": True}}],
    )
    tools_only = _settings()
    embedder = WordLlamaEmbedder()
    assert warm_up_plan(build_catalog(recalling), embedder).parts == [f"embedder {embedder.model}"]
    assert warm_up_plan(build_catalog(tools_only), embedder).parts == [], (
        "the memory tools embed after a model round: nothing to load before the request"
    )
    assert warm_up_plan(build_catalog(recalling), NullEmbedder()).parts == []


@pytest.mark.anyio
async def test_a_turn_during_the_warm_up_waits_for_its_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wordllama, "_LOADED", {})  # as in a fresh process
    loads: list[int] = []
    loading = threading.Event()
    real_load = WordLlamaEmbedder._load

    def counted(self: WordLlamaEmbedder) -> object:
        loads.append(1)
        loading.set()
        return real_load(self)

    monkeypatch.setattr(WordLlamaEmbedder, "_load", counted)
    embedder = WordLlamaEmbedder()
    warm_up = WarmUp([("embedder", embedder.load)])
    async with anyio.create_task_group() as group:
        group.start_soon(warm_up.run)
        await anyio.to_thread.run_sync(loading.wait)  # the warm-up is loading now
        vectors = await embedder.embed(["the first message"])
        assert warm_up.done.is_set(), "the turn's embed came after the warm-up's load"
    assert vectors.shape == (1, embedder.dimensions)
    assert loads == [1], "loaded once, by the warm-up"


@pytest.mark.anyio
async def test_a_failed_part_is_logged_and_never_raised() -> None:
    async def broken() -> None:
        raise EmbedderError("the model folder is unreadable")

    async def fine() -> None:
        return None

    warm_up = WarmUp([("embedder", broken), ("other", fine)])
    with capture_logs() as logs:
        await warm_up.run()
    assert warm_up.done.is_set()
    events = {entry["event"]: entry for entry in logs}
    assert events["warm_up_failed"]["part"] == "embedder"
    assert events["warm_up_failed"]["error"] == "EmbedderError"
    assert events["warmed_up"]["parts"] == ["other"]


@pytest.mark.slow
def test_ready_comes_once_the_embedder_is_loaded(tmp_path: Path) -> None:
    """Under systemd (JSON lines on stdout): the warm-up's end is logged before READY."""
    with TelegramFake(per_chat_interval=0.05) as fake:
        (tmp_path / "bot.toml").write_text(
            telegram_daemon_config(fake.base_url, USER, sections=RECALLING_AGENT),
            encoding="utf-8",
        )
        notify = NotifySocket(tmp_path / "notify.sock")
        env = {"TELEGRAM_BOT_TOKEN": fake.token, "NOTIFY_SOCKET": str(notify.path)}
        process = subprocess.Popen(
            [*command(), "run"],
            cwd=tmp_path,
            env=clean_env({**env, "INVOCATION_ID": "test"}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            notify.wait_for("READY=1", timeout=60)
            process.send_signal(signal.SIGTERM)
            stdout, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            notify.close()
    assert process.returncode == 0, stderr
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    names = [event["event"] for event in events]
    assert "warmed_up" in names, names
    assert names.index("warmed_up") < names.index("ready")
    (warmed,) = (event for event in events if event["event"] == "warmed_up")
    assert warmed["parts"] == [f"embedder {WordLlamaEmbedder().model}"]


@pytest.mark.slow
def test_a_broken_database_is_named_while_the_warm_up_runs(tmp_path: Path) -> None:
    """The warm-up's task group is open when the database fails to open: the error
    still comes out as one line, not a traceback. (`chat`, since a console-only `run`
    with no terminal is refused before anything opens.)"""
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "thalos.db").write_bytes(b"not a database, " * 400)
    (tmp_path / "bot.toml").write_text(
        'state_dir = "state"\n[provider]\nkind = "scripted"\n' + RECALLING_AGENT,
        encoding="utf-8",
    )
    result = run_piped(["chat"], "", cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr  # a state-folder failure: exit 2
    assert "error: database " in result.stderr
    assert "the file is not a SQLite database" in result.stderr
    assert "Traceback" not in result.stderr
