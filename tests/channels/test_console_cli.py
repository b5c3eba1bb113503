"""The console channel, driven through the real ``thalos-bot chat`` process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped
from tests.fakes.anthropic_api import AnthropicFake, text_reply

pytestmark = pytest.mark.slow

SCRIPTED = """
state_dir = "state"
[provider]
kind = "scripted"
[pump]
flush_interval = "0.1s"
"""


def write_config(tmp_path: Path, text: str = SCRIPTED) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_piped_chat_reads_lines_in_order_and_exits_zero_at_eof(tmp_path: Path) -> None:
    write_config(tmp_path)
    result = run_piped(["chat"], "hi\n/status\nsecond line\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "You said: hi"
    assert "Turns: 1" in result.stdout, "the status came after the first turn had finished"
    assert lines[-1] == "You said: second line"
    assert "\x1b[" not in result.stdout, "piped output is plain text"
    assert result.stderr == ""


def test_piped_chat_without_a_key_still_runs_commands(tmp_path: Path) -> None:
    write_config(tmp_path, 'state_dir = "state"\n')
    result = run_piped(["chat"], "/help\nhello\n/agents\n", cwd=tmp_path)
    assert result.returncode == 1, "the turn failed, so the script learns it did"
    assert "/cancel — stop the answer being written" in result.stdout
    assert "set the ANTHROPIC_API_KEY environment variable" in result.stdout
    assert "assistant: Assistant (current, default)" in result.stdout


def test_chat_with_no_config_file_uses_builtin_defaults(tmp_path: Path) -> None:
    state = tmp_path / "xdg"
    result = run_piped(
        ["chat"], "/status\n/agents\n", cwd=tmp_path, env={"XDG_STATE_HOME": str(state)}
    )
    assert result.returncode == 0, result.stderr
    assert "No session yet" in result.stdout
    assert "assistant: Assistant (default)" in result.stdout
    assert (state / "thalos-bot" / "thalos.db").exists()


def test_exit_word_stops_reading(tmp_path: Path) -> None:
    write_config(tmp_path)
    result = run_piped(["chat"], "one\n/exit\ntwo\n", cwd=tmp_path)
    assert result.returncode == 0
    assert "You said: one" in result.stdout
    assert "two" not in result.stdout


def test_a_restart_keeps_the_conversation(tmp_path: Path) -> None:
    write_config(tmp_path)
    run_piped(["chat"], "remember me\n", cwd=tmp_path)
    result = run_piped(["chat"], "/status\n", cwd=tmp_path)
    assert "Turns: 1" in result.stdout


def test_chat_against_the_anthropic_fake(tmp_path: Path) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("Hello", " from", " the fake."))
        write_config(
            tmp_path,
            f'state_dir = "state"\n[provider]\nbase_url = "{fake.base_url}"\nmax_retries = 0\n',
        )
        result = run_piped(
            ["chat"], "hi claude\n", cwd=tmp_path, env={"ANTHROPIC_API_KEY": "sk-ant-test-key"}
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "Hello from the fake."
        assert fake.requests[0].body["messages"][-1]["content"][0]["text"] == "hi claude"
    log_lines = (tmp_path / "state" / "chat.log").read_text().splitlines()
    turn = next(json.loads(line) for line in log_lines if '"turn_finished"' in line)
    assert turn["outcome"] == "completed"
    assert "sk-ant-test-key" not in "\n".join(log_lines)


def test_bad_config_names_the_file_and_key(tmp_path: Path) -> None:
    write_config(tmp_path, "[pump]\nflush_intervall = 1\n")
    result = run_piped(["chat"], "hi\n", cwd=tmp_path)
    assert result.returncode == 2
    assert (
        "bot.toml: pump.flush_intervall: unknown key (did you mean 'flush_interval'?)"
        in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_interactive_chat_under_a_pty(tmp_path: Path) -> None:
    write_config(tmp_path)
    words = " ".join(f"word{i}" for i in range(60))
    session = PtySession(["chat"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "Ctrl-D quits" in out and "›" in out)
        session.send("hello\r")
        session.read_until(lambda out: "You said: hello" in out)
        session.send(words + "\r")
        session.read_until(lambda out: "You said: word0 word1" in out)
        session.send("\x03")  # Ctrl-C during the answer cancels it
        session.read_until(lambda out: "[cancelled]" in out)
        session.read_until(lambda out: "›" in out.split("[cancelled]")[1])
        session.send("/status\r")
        session.read_until(lambda out: "Turns: 2" in out and "›" in out.split("Turns: 2")[1])
        session.send_eof()  # Ctrl-D at an empty prompt quits
        code = session.close()
    except BaseException:
        session.process.kill()
        session.close()
        raise
    assert code == 0
    assert "word59" not in session.visible.split("[cancelled]")[0].split("You said: word0")[1]
    assert (tmp_path / "state" / "console_history").exists()


def test_piped_chat_sends_slash_text_to_the_model_and_refuses_unknown_commands(
    tmp_path: Path,
) -> None:
    write_config(tmp_path)
    script = "/etc/hosts looks wrong\n//new\n/frobnicate\n/ 2\n"
    result = run_piped(["chat"], script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "You said: /etc/hosts looks wrong"
    assert lines[1] == "You said: /new"
    assert "/frobnicate is not a command I know" in lines[2]
    assert lines[-1] == "You said: / 2"


def test_ctrl_c_at_the_prompt_asks_for_a_second_one(tmp_path: Path) -> None:
    """Two quick presses (one to stop an answer, one too many) must not quit: a Ctrl-C at
    the empty prompt says so, and only the next one quits."""
    write_config(tmp_path)
    session = PtySession(["chat"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "Ctrl-D quits" in out and "›" in out)
        session.send("hello\r")
        session.read_until(
            lambda out: "You said: hello" in out and "›" in out.split("You said: hello")[1]
        )
        # Until the pump has marked "hello" handled, a Ctrl-C still sends /cancel (and is
        # told there is nothing to cancel); each press shows one or the other.
        for presses in range(1, 6):
            session.send("\x03")

            def answered(out: str, n: int = presses) -> bool:
                said = out.count("nothing to cancel") + out.count("Ctrl-C again to quit")
                return said >= n or session.process.poll() is not None

            session.read_until(answered)
            assert session.process.poll() is None, "a Ctrl-C at the prompt quit at once"
            if "Ctrl-C again to quit" in session.visible:
                break
        assert "Ctrl-C again to quit" in session.visible
        session.send("\x03")
        code = session.close()
    except BaseException:
        session.process.kill()
        session.close()
        raise
    assert code == 0
