"""bot.toml: validation, error messages that name the file and the key, and `check`."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.cli.main import main
from thalos_bot.config.loader import ConfigError, load_settings

REPO = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # errors name files relative to the working directory


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    return caught.value.problems


def test_the_shipped_config_is_valid_and_check_summarises_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    loaded = load_settings(REPO / "bot.toml")
    assert [a.id for a in loaded.settings.agents] == ["assistant", "coder"]
    assert main(["check", "--config", str(REPO / "bot.toml")]) == 0
    out = capsys.readouterr().out
    assert f"{REPO / 'bot.toml'}: valid" in out
    assert "assistant (default): Assistant" in out
    assert "console (enabled)" in out
    assert "memory: keywords and meaning, embedded WordLlama" in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[[agents]]\nid = "a"\nname = "' + "n" * 65 + '"\n',
            "bot.toml: agents[0].name: at most 64 characters",
        ),
        ('[[agents]]\nid = "Not A Slug"\nname = "x"\n', "bot.toml: agents[0].id: must be a slug"),
        (
            "[provider]\nmodle = 'x'\n",
            "bot.toml: provider.modle: unknown key (did you mean 'model'?)",
        ),
        (
            "[pump]\nidle_timeout = 'soon'\n",
            "bot.toml: pump.idle_timeout: 'soon' is not a duration",
        ),
        (
            "[provider]\nbase_url = 'ftp://x'\n",
            "bot.toml: provider.base_url: must be an http:// or https:// URL",
        ),
        ('default_agent = "ghost"\n', "bot.toml: default_agent: 'ghost' is not an agent id"),
        (
            '[[agents]]\nid = "a"\nname = "A"\n[[agents]]\nid = "a"\nname = "B"\n',
            "bot.toml: agents[1].id: 'a' is already used by agents[0]",
        ),
        ("[[agents]]\nname = 'x'\n", "bot.toml: agents[0].id: required"),
        ("x = [\n", "bot.toml: not valid TOML"),
        ("[tools]\nmax_parallel_calls = 0\n", "bot.toml: tools.max_parallel_calls:"),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: Path, text: str, expected: str) -> None:
    assert any(p.startswith(expected) for p in problems(tmp_path, text)), problems(tmp_path, text)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    found = problems(tmp_path, "[pump]\nflush_interval = 0.001\ntool_status = 'maybe'\n")
    assert len(found) == 2


def test_durations_and_relative_state_dir(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "bot.toml"
    path.parent.mkdir()
    path.write_text('state_dir = "data"\n[pump]\nidle_timeout = "90m"\nshutdown_grace = 5\n')
    loaded = load_settings(path)
    assert loaded.settings.pump.idle_timeout == 5400
    assert loaded.settings.pump.shutdown_grace == 5
    assert loaded.state_dir == (tmp_path / "conf" / "data").resolve()


def test_a_channel_section_without_a_plugin_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text("[channels.irc]\nenabled = true\n")
    assert main(["check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "error: bot.toml: channels.irc: no channel plugin named 'irc' is installed" in err
    assert "Traceback" not in err


SECRETS_HINT = (
    "unknown key: secrets never go in bot.toml; they come from the environment, "
    "ANTHROPIC_API_KEY / TELEGRAM_BOT_TOKEN / THALOS_MATRIX_ACCESS_TOKEN (under systemd: "
    "the EnvironmentFile)"
)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[provider]\napi_key = 'sk-ant-123'\n", "provider.api_key"),
        ("api_key = 'sk-ant-123'\n", "api_key"),
        ("[channels.telegram]\ntoken = '123:abc'\n", "channels.telegram.token"),
        ("[channels.telegram]\nbot_token = '123:abc'\n", "channels.telegram.bot_token"),
    ],
)
def test_a_secret_in_the_file_says_where_secrets_come_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(text)
    assert main(["check", "--config", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: bot.toml: {key}: {SECRETS_HINT}"]


def test_a_username_in_the_allowlist_says_ids_are_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text('[channels.telegram]\nenabled = true\nallowed_user_ids = ["@alice"]\n')
    assert main(["check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "channels.telegram.allowed_user_ids: '@alice' is not a user id" in err
    assert "`thalos-bot telegram pair` finds yours" in err
    assert len(err.splitlines()) == 1, err


@pytest.mark.parametrize(
    ("section", "said"),
    [
        (
            "allowed_user_ids = [123, -5]",
            "allowed_user_ids: user ids are positive integers, not -5",
        ),
        ("allowed_user_ids = [0]", "allowed_user_ids: user ids are positive integers, not 0"),
        (
            "allowed_user_ids = [123]\ngroups = [-100123, 42]",
            "groups: group chat ids are negative (e.g. -1001234567890), not 42",
        ),
    ],
)
def test_an_id_of_the_wrong_sign_says_which_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, said: str
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(f"[channels.telegram]\nenabled = true\n{section}\n")
    assert main(["check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"bot.toml: channels.telegram.{said}" in err, err


def test_a_top_level_key_after_a_table_says_where_it_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = problems(tmp_path, '[provider]\nkind = "scripted"\nstate_dir = "state"\n')
    assert found == [
        (
            "bot.toml: provider.state_dir: unknown key: 'state_dir' is a top-level key, and "
            "top-level keys go before the first [table] (TOML puts every key after a [table] "
            "line inside it)"
        )
    ]
    path = tmp_path / "bot.toml"
    path.write_text("[channels.console]\nenabled = true\ndefault_agent = 'a'\n")
    assert main(["check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "channels.console.default_agent: unknown key: 'default_agent' is a top-level" in err


def test_check_lists_mcp_servers_policies_schedules_and_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        '[[mcp_servers]]\nname = "fs"\ncommand = "npx"\nargs = ["server-fs", "/srv"]\n'
        '[[mcp_servers]]\nname = "web"\nenabled = false\nurl = "https://mcp.example/mcp"\n'
        '[[tool_policies]]\ntool = "fs__write_*"\naction = "ask"\nrequire_roles = ["admin"]\n'
        '[[schedules]]\nid = "daily"\ntask = "hi"\ncron = "0 9 * * *"\n'
        'deliver_to = "console:console"\nprincipal = "local"\n'
        "[limits]\ndaily_tokens = 50000\ndaily_cost_usd = 2.5\n"
    )
    assert main(["check", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "MCP servers (2):\n  fs: npx server-fs /srv\n  web (disabled): https://mcp.example/mcp"
        in out
    )
    assert (
        "tool policies (1; the most specific match decides):\n  fs__write_*: ask for roles admin"
        in out
    )
    assert "schedules in bot.toml (1):\n  daily: cron '0 9 * * *' (UTC), to console:console" in out
    assert "limits: 50,000 tokens a day, $2.50 a day, 8 tool rounds a turn (days in UTC)" in out
