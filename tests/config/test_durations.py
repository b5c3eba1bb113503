"""Durations in bot.toml: compound strings, per-key ranges, ``"off"`` where it means
something, and nan, inf, negative or absurd values refused by ``check`` instead of
breaking turns later (``idle_timeout = inf`` used to pass, then every message after the
first failed with an OverflowError)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter

from tests.pump.harness import running_pump
from thalos_bot.cli.main import main
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.config.models import Settings
from thalos_bot.config.types import Seconds
from thalos_bot.providers.scripted import Say, ScriptedProvider

OFF_HINT = '; to turn it off write "off"'


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # errors name files relative to the working directory


def load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path).settings


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return caught.value.problems


@pytest.mark.parametrize(
    ("written", "seconds"),
    [
        (90, 90.0),
        (2.5, 2.5),
        ("90", 90.0),
        ("45s", 45.0),
        ("500ms", 0.5),
        ("15m", 900.0),
        ("1m30s", 90.0),
        ("1h30m", 5400.0),
        ("1h 30m 15s", 5415.0),
        ("1.5h", 5400.0),
        ("2d4h", 187_200.0),
        (" 2H ", 7200.0),
        ("1d2h3m4s5ms", 93_784.005),
    ],
)
def test_durations_are_seconds_or_compound_strings(written: float | str, seconds: float) -> None:
    assert TypeAdapter(Seconds).validate_python(written) == pytest.approx(seconds)


def test_compound_durations_load_from_the_file(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        "[pump]\nidle_timeout = '1h30m'\nshutdown_grace = '1m30s'\n"
        "[tools]\nrestart_backoff = '500ms'\n",
    )
    assert settings.pump.idle_timeout == 5400
    assert settings.pump.shutdown_grace == 90
    assert settings.tools.restart_backoff == 0.5


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("idle_timeout = inf", "must be finite, at most 366d" + OFF_HINT),
        ("idle_timeout = -inf", "must be finite, at most 366d" + OFF_HINT),
        ("idle_timeout = nan", "nan is not a duration; use e.g. 30"),
        ("idle_timeout = 1e14", "must be at most 366d (1e+14s given)" + OFF_HINT),
        ("idle_timeout = -5", "must not be negative" + OFF_HINT),
        ("idle_timeout = 0", "must be at least 1m (0s given)" + OFF_HINT),
        ("idle_timeout = 10", "must be at least 1m (10s given)" + OFF_HINT),
        ("idle_timeout = '400d'", "must be at most 366d (3.456e+07s given)" + OFF_HINT),
        ("idle_timeout = 'soon'", "'soon' is not a duration; use e.g. 30, \"30s\""),
        ("idle_timeout = '30m1h'", "'30m1h' is not a duration"),
        ("idle_timeout = '1m1m'", "'1m1m' is not a duration"),
        ("idle_timeout = '1h x'", "'1h x' is not a duration"),
        ("idle_timeout = ''", "'' is not a duration"),
        ("idle_timeout = true", "expected a duration such as 30"),
        ("shutdown_grace = 'off'", "'off' is not a duration"),
        ("shutdown_grace = '11m'", "must be at most 10m (660s given)"),
        ("shutdown_grace = 0", "must be more than 0"),
        ("shutdown_grace = inf", "must be finite, at most 10m"),
    ],
)
def test_bad_pump_durations_name_the_file_and_the_key(
    tmp_path: Path, line: str, expected: str
) -> None:
    key = line.split(" = ", maxsplit=1)[0]
    found = problems(tmp_path, f"[pump]\n{line}\n")
    assert len(found) == 1, found
    assert found[0].startswith(f"bot.toml: pump.{key}: {expected}"), found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[provider]\ntimeout = '2h'\n", "bot.toml: provider.timeout: must be at most 1h"),
        ("[provider]\ntimeout = inf\n", "bot.toml: provider.timeout: must be finite, at most 1h"),
        (
            "[tools]\nstartup_timeout = '2h'\n",
            "bot.toml: tools.startup_timeout: must be at most 1h",
        ),
        ("[tools]\nrestart_backoff_max = 1e14\n", "bot.toml: tools.restart_backoff_max: must be"),
        (
            '[[mcp_servers]]\nname = "x"\ncommand = "x"\ntimeout = "2d"\n',
            "bot.toml: mcp_servers[0].timeout: must be at most 1d (172800s given)",
        ),
        ("[telemetry]\nmetric_interval = '10ms'\n", "bot.toml: telemetry.metric_interval: must be"),
        ("[telemetry]\nmetric_interval = nan\n", "bot.toml: telemetry.metric_interval: nan is"),
    ],
)
def test_every_duration_key_is_bounded(tmp_path: Path, text: str, expected: str) -> None:
    found = problems(tmp_path, text)
    assert len(found) == 1
    assert found[0].startswith(expected), found


def test_idle_timeout_can_be_turned_off(tmp_path: Path) -> None:
    assert load(tmp_path, "[pump]\nidle_timeout = 'off'\n").pump.idle_timeout is None
    assert load(tmp_path, "[pump]\nidle_timeout = 'OFF'\n").pump.idle_timeout is None
    assert load(tmp_path, "[pump]\nidle_timeout = '1h30m'\n").pump.idle_timeout == 5400
    assert load(tmp_path, "").pump.idle_timeout == 7200


def test_check_refuses_an_infinite_idle_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text("[pump]\nidle_timeout = inf\n", encoding="utf-8")
    assert main(["check", "--config", str(path)]) == 2
    assert "bot.toml: pump.idle_timeout: must be finite" in capsys.readouterr().err


@pytest.mark.anyio
async def test_with_idle_timeout_off_a_conversation_never_goes_idle() -> None:
    provider = ScriptedProvider([[Say("one")], [Say("two")]])
    async with running_pump(provider, idle_timeout=None) as h:
        await h.source.send("first").wait()
        first = await h.binding()
        h.clock.advance(days=3650)
        await h.source.send("second").wait()
        second = await h.binding()
    assert second.session_id == first.session_id
    assert h.adapter.notices() == []
    assert h.adapter.final_texts() == ["one", "two"]
    assert [m.text for m in provider.requests[1].messages][-1] == "second"
    assert len(provider.requests[1].messages) > 1, "the second turn saw the first one"
