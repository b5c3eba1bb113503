"""`thalos-bot slack pair` over the fake: the code sent in a DM adds its sender to
allowed_users (comments kept) and turns the channel on; strangers, wrong codes and
channel messages do nothing, and nobody else is answered."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.channels.cli_process import run_piped
from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, STRANGER, USER
from thalos_bot.channels.admission.pair_command import EXIT_NOT_ADDED, PAIRED
from thalos_bot.channels.ports import EXIT_CONFIG, EXIT_UNAUTHORIZED
from thalos_bot_slack import BOT_TOKEN_ENV
from thalos_bot_slack.pair import pair

pytestmark = pytest.mark.anyio
CODE = re.compile(r"[A-Z2-9]{4}-[A-Z2-9]{4}")


class Lines(list[str]):
    """What pair() shows; :meth:`code` waits for the code among it."""

    def __init__(self) -> None:
        super().__init__()
        self.shown = anyio.Event()

    def show(self, line: str) -> None:
        self.append(line)
        if CODE.search(line):
            self.shown.set()

    async def code(self) -> str:
        with anyio.fail_after(30):
            await self.shown.wait()
        return next(m.group(0) for line in self if (m := CODE.search(line)))


def config(fake: SlackFake, folder: Path) -> Path:
    path = folder / "bot.toml"
    path.write_text(
        "# my bot\n[channels.slack]\nenabled = false  # on after pairing\n"
        f'allowed_users = []\nbase_url = "{fake.base_url}"\nping_interval = 0.3\n',
        encoding="utf-8",
    )
    return path


async def test_pairing_adds_whoever_sends_the_code(fake: SlackFake, tmp_path: Path) -> None:
    path = config(fake, tmp_path)
    lines, result = Lines(), []

    async def run() -> None:
        result.append(await pair(path, yes=True, ask=None, show=lines.show))

    async with anyio.create_task_group() as group:  # its end waits for pair() to return
        group.start_soon(run)
        code = await lines.code()
        fake.say(STRANGER, "ABCD-EFGH")
        fake.say(USER, code, channel=CHANNEL)  # not a DM: ignored
        fake.say(USER, f" {code.lower()} ")
    assert result == [0]
    text = path.read_text(encoding="utf-8")
    assert f'allowed_users = ["{USER}"]' in text
    assert "enabled = true" in text
    assert "# my bot" in text
    assert fake.texts(fake.dm(USER)) == [PAIRED]
    assert fake.texts(fake.dm(STRANGER)) == []
    assert fake.texts(CHANNEL) == []
    assert f"Added {USER} to allowed_users in" in "\n".join(lines)


async def test_without_a_terminal_nobody_is_added_unasked(fake: SlackFake, tmp_path: Path) -> None:
    path = config(fake, tmp_path)
    before = path.read_text(encoding="utf-8")
    lines, result = Lines(), []

    async def run() -> None:
        result.append(await pair(path, yes=False, ask=None, show=lines.show))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        code = await lines.code()
        fake.say(USER, code)
    assert result == [EXIT_NOT_ADDED]
    assert path.read_text(encoding="utf-8") == before
    assert "Run again with --yes" in "\n".join(lines)
    assert fake.texts(fake.dm(USER)) == []


async def test_an_expired_code_adds_nobody(fake: SlackFake, tmp_path: Path) -> None:
    path = config(fake, tmp_path)
    lines: list[str] = []
    assert await pair(path, yes=True, ask=None, show=lines.append, ttl=0.5) == EXIT_NOT_ADDED
    assert "expired" in lines[-1]


def test_the_command_names_a_missing_bot_toml(tmp_path: Path) -> None:
    result = run_piped(["slack", "pair"], "", cwd=tmp_path, timeout=60)
    assert result.returncode == EXIT_CONFIG
    assert "there is no" in result.stderr
    assert "thalos-bot init" in result.stderr


async def test_a_bad_setting_is_named_with_its_file_and_key(
    fake: SlackFake, tmp_path: Path
) -> None:
    path = tmp_path / "bot.toml"
    path.write_text('[channels.slack]\nping_interval = "soon"\n', encoding="utf-8")
    lines: list[str] = []
    assert await pair(path, yes=True, ask=None, show=lines.append) == EXIT_CONFIG
    assert "channels.slack.ping_interval" in lines[-1]
    assert "bot.toml" in lines[-1]


async def test_a_refused_token_ends_pairing_with_the_run_s_exit_code(
    fake: SlackFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BOT_TOKEN_ENV, "xoxb-not-the-one")
    path = config(fake, tmp_path)
    lines: list[str] = []
    assert await pair(path, yes=True, ask=None, show=lines.append) == EXIT_UNAUTHORIZED
    assert BOT_TOKEN_ENV in lines[-1]
    assert "xoxb-not-the-one" not in "\n".join(lines)
