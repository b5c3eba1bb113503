"""``thalos-bot doctor`` checks the speech engine while ``[speech]`` is on."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.channels.checks import Check
from thalos_bot.service.doctor import run_doctor

pytestmark = pytest.mark.anyio

HEAD = 'state_dir = "state"\n[provider]\nkind = "scripted"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def speech(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.name == "speech engine"]


async def test_no_line_while_speech_is_off(tmp_path: Path) -> None:
    assert speech(await run_doctor(write(tmp_path, ""), offline=True)) == []


async def test_the_local_engine_is_found(tmp_path: Path) -> None:
    checks = await run_doctor(write(tmp_path, "[speech]\nenabled = true\n"), offline=True)
    (check,) = speech(checks)
    assert check.outcome == "ok"
    assert check.detail == "espeak-ng (voice en-us) and ffmpeg found"


async def test_missing_programs_fail_with_the_apt_get_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    checks = await run_doctor(write(tmp_path, "[speech]\nenabled = true\n"), offline=True)
    (check,) = speech(checks)
    assert check.outcome == "fail"
    assert check.detail.startswith("espeak-ng and ffmpeg not found on the PATH")
    assert "sudo apt-get install -y --no-install-recommends espeak-ng ffmpeg" in check.fix
    assert "    fix: install them: sudo apt-get install" in "\n".join(check.lines())


async def test_an_endpoint_is_named_and_its_key_variable_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("THALOS_TEST_SPEECH_KEY", raising=False)
    config = write(
        tmp_path,
        '[speech]\nenabled = true\nkind = "openai"\n[speech.openai]\n'
        'base_url = "https://api.openai.com/v1"\napi_key_env = "THALOS_TEST_SPEECH_KEY"\n',
    )
    checks = await run_doctor(config, offline=True)
    (check,) = speech(checks)
    assert check.outcome == "ok"
    assert check.detail == "https://api.openai.com/v1/audio/speech (tts-1, voice alloy, opus)"
    (key,) = [c for c in checks if c.name == "THALOS_TEST_SPEECH_KEY is set"]
    assert (key.outcome, key.detail) == ("fail", "not set (needed by [speech])")
    monkeypatch.setenv("THALOS_TEST_SPEECH_KEY", "sk-x")
    checks = await run_doctor(config, offline=True)
    (key,) = [c for c in checks if c.name == "THALOS_TEST_SPEECH_KEY is set"]
    assert key.outcome == "ok"
