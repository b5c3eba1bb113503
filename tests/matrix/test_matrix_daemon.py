"""The real daemon (`thalos-bot run`) on the real Synapse: killed with SIGKILL while its
final answer's send is in flight (Synapse took it, the answer never came back), then
restarted on the same state folder, it shows the answer exactly once: the retry is the
same `PUT …/send/m.room.message/{txnId}`, whose transaction id the outbox row kept."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.channels.cli_process import clean_env, command
from tests.matrix.accounts import Account, register, unique
from tests.matrix.human import Human
from tests.matrix.proxy import any_send, fronting, sends_of
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import TOKEN_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

QUESTION = "remember the milk"
ANSWER = f"You said: {QUESTION}"


def _config(
    tmp_path: Path,
    homeserver: str,
    bot: Account,
    user: str,
    streaming: str,
    request_timeout: int = 5,
) -> None:
    (tmp_path / "bot.toml").write_text(
        f"""
state_dir = "state"
[provider]
kind = "scripted"
[pump]
flush_interval = "0.1s"
[channels.console]
enabled = false
[channels.matrix]
enabled = true
homeserver = "{homeserver}"
user_id = "{bot.user_id}"
allowed_users = ["{user}"]
sync_timeout = 2
request_timeout = {request_timeout}
room_min_interval = "0.05s"
backoff_initial = "0.1s"
backoff_max = "1s"
streaming = "{streaming}"
""",
        encoding="utf-8",
    )


def _start(tmp_path: Path, bot: Account) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*command(), "run"],
        cwd=tmp_path,
        env=clean_env({TOKEN_ENV: bot.access_token}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _rows(tmp_path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
        return db.execute("SELECT text, state FROM outbox ORDER BY created_at").fetchall()


async def _finish(process: subprocess.Popen[str], sig: int) -> str:
    process.send_signal(sig)
    _, stderr = await anyio.to_thread.run_sync(lambda: process.communicate(timeout=60))
    return stderr


@pytest.mark.parametrize(
    "streaming",
    [
        pytest.param("off", id="the final is a new message"),
        pytest.param("edit", id="the final is an edit of the streamed message"),
    ],
)
async def test_a_kill_during_the_final_send_shows_the_answer_once_after_restart(
    synapse: SynapseServer, tmp_path: Path, streaming: str
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with fronting(synapse.base_url) as proxy, Human(synapse, alice) as human:
        proxy.hold.append(sends_of(ANSWER))
        _config(tmp_path, proxy.base_url, bot, alice.user_id, streaming)
        room = await human.direct_chat(bot.user_id)
        first = _start(tmp_path, bot)
        try:
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say(room, QUESTION)
            with anyio.fail_after(60):
                while not proxy.held:
                    await proxy.changed.wait()
        finally:
            await _finish(first, signal.SIGKILL)
        assert first.returncode == -signal.SIGKILL
        # Synapse stored the held send: the room shows the answer already.
        await human.until(lambda h: ANSWER in h.bodies(room, bot.user_id))
        assert [state for _, state in _rows(tmp_path)] == ["pending"]

        second = _start(tmp_path, bot)
        try:
            await human.say(room, "ping")
            # The room's outbox works in order: the resumed final goes before this.
            await human.until(lambda h: "You said: ping" in h.bodies(room, bot.user_id))
        finally:
            stderr = await _finish(second, signal.SIGTERM)
        assert second.returncode == 0, stderr
        bodies = human.bodies(room, bot.user_id)
    assert bodies == [ANSWER, "You said: ping"]
    assert {state for _, state in _rows(tmp_path)} == {"delivered"}


def _resumable(tmp_path: Path) -> bool:
    """The turn's outbox row exists and has its in-flight send's key noted."""
    try:
        with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
            rows = db.execute("SELECT progress FROM outbox").fetchall()
    except sqlite3.OperationalError:  # not created yet, or locked by the daemon
        return False
    return any('"key": ' in str(progress) for (progress,) in rows)


async def test_a_kill_mid_stream_resumes_the_streamed_message_without_a_second_copy(
    synapse: SynapseServer, tmp_path: Path
) -> None:
    """The streamed message's first send is in flight (Synapse took it, the answer never
    came back) when the daemon is killed; after the restart that same message is edited
    to the final text: no second message, nothing replayed."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with fronting(synapse.base_url) as proxy, Human(synapse, alice) as human:
        # Every send held (the retry after the request timeout too): nothing the bot
        # sends gets an answer until it is killed.
        proxy.holding = any_send
        # A long request timeout: the held send is not retried before the kill, so what
        # the row holds was written when the turn ended, not at a retry.
        _config(tmp_path, proxy.base_url, bot, alice.user_id, "edit", request_timeout=60)
        room = await human.direct_chat(bot.user_id)
        first = _start(tmp_path, bot)
        try:
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say(room, QUESTION)
            with anyio.fail_after(60):
                while not proxy.held:
                    await proxy.changed.wait()
                # A subprocess's database gives no event to wait on: check it, bounded.
                while not _resumable(tmp_path):
                    await anyio.sleep(0.05)
            assert len(proxy.held) == 1, "the row was written at a retry, not at once"
        finally:
            await _finish(first, signal.SIGKILL)
        proxy.holding = None
        await human.until(lambda h: h.bodies(room, bot.user_id))
        second = _start(tmp_path, bot)
        try:
            await human.until(lambda h: ANSWER in h.bodies(room, bot.user_id))
            await human.say(room, "ping")
            await human.until(lambda h: "You said: ping" in h.bodies(room, bot.user_id))
        finally:
            stderr = await _finish(second, signal.SIGTERM)
        assert second.returncode == 0, stderr
        shown = human.shown(room, bot.user_id)
    assert [m.body for m in shown] == [ANSWER, "You said: ping"]
    assert {state for _, state in _rows(tmp_path)} == {"delivered"}
