"""``[speech]`` in bot.toml: its defaults, and each mistake named by file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.config.loader import ConfigError, load_settings


def load(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    return caught.value.problems


def test_speech_is_off_by_default_and_local_when_on(tmp_path: Path) -> None:
    path = tmp_path / "bot.toml"
    path.write_text("[speech]\nenabled = true\n", encoding="utf-8")
    speech = load_settings(path).settings.speech
    assert (speech.enabled, speech.kind, speech.mode, speech.max_clip_chars) == (
        True,
        "local",
        "auto",
        1000,
    )
    assert speech.local.voice == "en-us"
    assert speech.openai is None
    path.write_text("", encoding="utf-8")
    assert load_settings(path).settings.speech.enabled is False


def test_an_openai_endpoint_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        '[speech]\nenabled = true\nkind = "openai"\nmode = "on"\n'
        '[speech.openai]\nbase_url = "http://127.0.0.1:8880/v1/"\nmodel = "kokoro"\n'
        'voice = "af_bella"\nformat = "mp3"\napi_key_env = "KOKORO_KEY"\ntimeout = "30s"\n',
        encoding="utf-8",
    )
    endpoint = load_settings(path).settings.speech.openai
    assert endpoint is not None
    assert endpoint.base_url == "http://127.0.0.1:8880/v1"
    assert (endpoint.model, endpoint.voice, endpoint.format) == ("kokoro", "af_bella", "mp3")
    assert (endpoint.api_key_env, endpoint.timeout) == ("KOKORO_KEY", 30.0)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '[speech]\nkind = "openai"\n',
            'bot.toml: speech.openai: required when speech.kind = "openai"',
        ),
        (
            '[speech]\nenabled = "yes"\n',
            "bot.toml: speech.enabled: input should be a valid boolean",
        ),
        (
            '[speech]\nkind = "espeak"\n',
            "bot.toml: speech.kind: input should be 'local' or 'openai'",
        ),
        ('[speech]\nmode = "always"\n', "bot.toml: speech.mode: input should be 'auto', 'on'"),
        ("[speech]\nmax_clip_chars = 5000\n", "bot.toml: speech.max_clip_chars: input should be"),
        ('[speech.local]\nvoice = "-v evil"\n', "bot.toml: speech.local.voice: does not match"),
        ('[speech.openai]\nbase_url = "api.openai.com"\n', "bot.toml: speech.openai.base_url:"),
        (
            '[speech.openai]\nbase_url = "http://x"\nformat = "ogg"\n',
            "bot.toml: speech.openai.format: input should be 'mp3', 'opus'",
        ),
        (
            '[speech.openai]\nbase_url = "http://x"\napi_key_env = "sk-live-123"\n',
            "bot.toml: speech.openai.api_key_env: does not match",
        ),
        (
            '[speech.openai]\nbase_url = "http://x"\napi_key = "sk-live-123"\n',
            "bot.toml: speech.openai.api_key: unknown key: secrets never go in bot.toml",
        ),
        ("[speech]\nvoice = 'alloy'\n", "bot.toml: speech.voice: unknown key"),
    ],
)
def test_each_mistake_names_the_file_and_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    problems = load(tmp_path, text)
    assert any(line.startswith(problem) for line in problems), problems
