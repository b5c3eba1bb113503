"""``thalos-bot telegram pair`` against the Telegram fake: the one who sends the code is
added to bot.toml (comments kept); strangers, wrong codes and late codes get nothing."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import anyio
import pytest

from tests.channels.cli_process import clean_env, command
from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import STRANGER, USER
from thalos_bot.channels.admission.pair_command import EXIT_NOT_ADDED, PAIRED
from thalos_bot.channels.admission.pairing import CODE_TTL, PairingCode
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.pair_command import pair

CODE = re.compile(r"^\s+([A-Z2-9]{4}-[A-Z2-9]{4})$", re.MULTILINE)

COMMENTED = """\
# My bot. This comment must survive pairing.
state_dir = "state"

[provider]
kind = "scripted"   # offline

[channels.console]
enabled = true      # the terminal too

# Telegram, set up by pairing.
[channels.telegram]
enabled = false     # pairing turns it on
allowed_user_ids = []
base_url = "{base_url}"
poll_timeout = 1    # short polls in tests
"""


def write_config(tmp_path: Path, fake: TelegramFake) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(COMMENTED.format(base_url=fake.base_url), encoding="utf-8")
    return path


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def code_shown(lines: list[str], fake: TelegramFake) -> str:
    await fake.wait_for(lambda: fake.polling and CODE.search("\n".join(lines)), timeout=10)
    match = CODE.search("\n".join(lines))
    assert match is not None
    return match.group(1)


def nothing_sent(fake: TelegramFake) -> bool:
    methods = {call.method for call in fake.calls()}
    return methods <= {"getMe", "getUpdates", "close", "logOut", "deleteWebhook"}


pytestmark = pytest.mark.anyio


async def test_the_sender_of_the_code_is_added_and_comments_kept(
    tmp_path: Path, fake: TelegramFake
) -> None:
    path = write_config(tmp_path, fake)
    lines: list[str] = []
    results: list[int] = []
    async with anyio.create_task_group() as group:

        async def pairing() -> None:
            results.append(await pair(path, yes=True, ask=None, show=lines.append))

        group.start_soon(pairing)
        code = await code_shown(lines, fake)
        fake.push_text(STRANGER, STRANGER, "hello bot?")
        fake.push_text(STRANGER, STRANGER, "AAAA-AAAA")
        fake.push_text(-100123, USER, code, chat_type="group")
        fake.push_text(USER, USER, code.lower().replace("-", " "), first_name="Ada", username="ada")
    assert results == [0], lines
    text = path.read_text()
    config = tomllib.loads(text)["channels"]["telegram"]
    assert config["allowed_user_ids"] == [USER]
    assert config["enabled"] is True
    for comment in (
        "# My bot. This comment must survive pairing.",
        "# offline",
        "# the terminal too",
        "# Telegram, set up by pairing.",
        "# short polls in tests",
    ):
        assert comment in text
    assert f"The code came from Ada (@ada), user id {USER}." in lines
    assert fake.texts(STRANGER) == [], "nobody is answered during pairing"
    assert fake.texts(-100123) == []
    assert fake.texts(USER) == [PAIRED], "the person paired is told so, in the chat"
    sent = [call.method for call in fake.calls() if call.method == "sendMessage"]
    assert sent == ["sendMessage"], "the confirmation is the one message sent"
    assert fake.pending_update_count == 0, "every update read is acknowledged"


async def test_an_expired_code_is_refused(tmp_path: Path, fake: TelegramFake) -> None:
    path = write_config(tmp_path, fake)
    before = path.read_text()
    clock = Clock()
    lines: list[str] = []
    results: list[int] = []
    async with anyio.create_task_group() as group:

        async def pairing() -> None:
            results.append(await pair(path, yes=True, ask=None, show=lines.append, clock=clock))

        group.start_soon(pairing)
        code = await code_shown(lines, fake)
        clock.now += CODE_TTL + 1
        fake.push_text(USER, USER, code)
    assert results == [EXIT_NOT_ADDED]
    assert any("the pairing code expired" in line for line in lines)
    assert path.read_text() == before
    assert nothing_sent(fake)


async def test_declining_or_no_terminal_leaves_the_file_alone(
    tmp_path: Path, fake: TelegramFake
) -> None:
    path = write_config(tmp_path, fake)
    before = path.read_text()
    questions: list[str] = []

    async def decline(question: str) -> bool:
        questions.append(question)
        return False

    for ask in (decline, None):
        lines: list[str] = []
        results: list[int] = []
        async with anyio.create_task_group() as group:

            async def pairing() -> None:
                results.append(await pair(path, yes=False, ask=ask, show=lines.append))  # noqa: B023

            group.start_soon(pairing)
            fake.push_text(USER, USER, await code_shown(lines, fake))
        assert results == [EXIT_NOT_ADDED]
        assert path.read_text() == before
    assert questions == [f"Allow them to talk to the bot (add {USER} to {path})? [y/N] "]


def test_a_code_is_single_use_and_compared_whole() -> None:
    clock = Clock()
    code = PairingCode(clock=clock)
    assert not code.redeem(code.shown[:-1])
    assert not code.redeem(code.shown + "X")
    assert not code.redeem("")
    assert code.redeem(f"  {code.shown.lower()} ")
    assert not code.redeem(code.shown), "a code works once"
    late = PairingCode(clock=clock)
    clock.now += CODE_TTL
    assert not late.redeem(late.shown)


@pytest.mark.slow
def test_init_then_pair_through_the_real_command(tmp_path: Path, fake: TelegramFake) -> None:
    env = clean_env({TOKEN_ENV: fake.token})
    init = subprocess.run(
        [*command(), "init", "--telegram", "--model", "claude-test"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert init.returncode == 0, init.stderr
    assert "thalos-bot telegram pair" in init.stdout
    path = tmp_path / "bot.toml"
    text = path.read_text()
    text = text.replace(
        "[channels.telegram]\n",
        f'[channels.telegram]\nbase_url = "{fake.base_url}"\npoll_timeout = 1\n',
    )
    path.write_text(text)
    process = subprocess.Popen(
        [*command(), "telegram", "pair", "--yes"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        shown = ""
        while not CODE.search(shown):
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            shown += line
        match = CODE.search(shown)
        assert match is not None
        fake.push_text(USER, USER, match.group(1))
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert f"Added {USER} to allowed_user_ids in bot.toml." in out
    assert fake.token not in out + err
    config = tomllib.loads(path.read_text())
    assert config["channels"]["telegram"]["allowed_user_ids"] == [USER]
    assert "# the same as the console: share memories with it" in path.read_text()
    check = subprocess.run(
        [*command(), "check"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert "telegram (enabled): private chats with 1 allowed user(s)" in check.stdout


@pytest.mark.slow
def test_init_offers_pairing_right_away_with_the_token_it_was_given(
    tmp_path: Path, fake: TelegramFake
) -> None:
    """In a terminal: the token typed for the secrets file pairs at once (the secrets
    file gets it at 0600, bot.toml never), and the sender is allowed."""
    import stat

    from tests.channels.cli_process import PtySession

    shown_code = re.compile(r"\b([A-Z2-9]{4}-[A-Z2-9]{4})\b")
    session = PtySession(["init"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "Model [" in out, timeout=60)
        session.send("claude-sonnet-5-5\r")
        session.read_until(lambda out: "State folder (relative to bot.toml) [state]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Telegram? (y/N) [n]:" in out)
        session.send("y\r")
        session.read_until(lambda out: "Serve the web chat page on this machine?" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Slack? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Discord? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Matrix? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Signal (through signal-cli)? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use email? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Write the secrets file now" in out)
        session.send("y\r")
        session.read_until(lambda out: "ANTHROPIC_API_KEY (" in out)
        session.send("\r")
        session.read_until(lambda out: "TELEGRAM_BOT_TOKEN (" in out)
        session.send(fake.token + "\r")
        session.read_until(lambda out: "Pair your Telegram account now?" in out)
        path = tmp_path / "bot.toml"  # written by now: point it at the fake
        path.write_text(
            path.read_text().replace(
                "[channels.telegram]\n",
                f'[channels.telegram]\nbase_url = "{fake.base_url}"\npoll_timeout = 1\n',
            )
        )
        session.send("y\r")
        session.read_until(lambda out: "Waiting for it" in out, timeout=30)
        match = shown_code.search(session.visible.split("Send this code", 1)[1])
        assert match is not None
        fake.push_text(USER, USER, match.group(1))
        session.read_until(lambda out: "Allow them to talk to the bot" in out, timeout=30)
        session.send("y\r")
        session.read_until(lambda out: "offline echo model" in out, timeout=30)
        session.send("n\r")
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    assert fake.token not in session.output, "the token is typed without echo"
    assert f"Added {USER} to allowed_user_ids in bot.toml." in session.visible
    assert "thalos-bot telegram pair" not in session.visible.split("Next:", 1)[1], "paired"
    assert fake.texts(USER) == [PAIRED]
    config = tomllib.loads(path.read_text())
    assert config["channels"]["telegram"]["allowed_user_ids"] == [USER]
    assert fake.token not in path.read_text()
    secrets = tmp_path / "thalos-bot.env"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert f"TELEGRAM_BOT_TOKEN={fake.token}" in secrets.read_text().splitlines()
