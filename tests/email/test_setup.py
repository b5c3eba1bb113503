"""Email's settings, ``thalos-bot init --email`` (through the manifest) and ``doctor``'s
checks against the real Dovecot and Postfix: reachable and logged in, or a named
failure with its fix."""

from __future__ import annotations

import re
import tomllib
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from tests.channels.contract.daemon import running
from tests.email.servers import MailServers
from tests.email.world import World, text_of
from thalos_bot.channels.admission.pair_command import PAIRED, Found
from thalos_bot.channels.admission.pairing import PairingCode
from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError
from thalos_bot.cli.main import main
from thalos_bot.service.standby import holds_connection
from thalos_bot_email import PASSWORD_ENV
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.doctor import email_checks
from thalos_bot_email.manifest import manifest
from thalos_bot_email.pair import EmailSide, pair
from thalos_bot_email.plugin import read_password

CODE = r"[A-Z2-9]{4}-[A-Z2-9]{4}"


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"enabled": True}, "give the bot's own mail address"),
        ({"address": "bot"}, "is not a mail address"),
        ({"imap_url": "imap://mail.example.org"}, "IMAP without TLS is not offered"),
        ({"imap_url": "imap+plain://mail.example.org"}, "plaintext is allowed only to"),
        ({"smtp_url": "http://mail.example.org"}, "the scheme must be one of"),
        ({"allowed_senders": ["ann"]}, "is not a mail address"),
        ({"authserv_id": "mx.example.org;"}, "is not a server name"),
        (
            {"enabled": True, "address": "bot@example.org", "authserv_id": "mx.example.org"},
            "an empty list never means everyone",
        ),
        (
            {"enabled": True, "address": "bot@example.org", "allowed_senders": ["a@b.org"]},
            "name the receiving server",
        ),
    ],
)
def test_bad_settings_are_named(values: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        EmailConfig.model_validate(values)


def test_one_replica_at_a_time_holds_the_mailbox() -> None:
    """On replicas only the holder of email's connection lease reads and answers."""
    assert holds_connection(manifest, EmailConfig.model_validate({}))


def test_a_missing_password_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2, as every configuration error: systemd does not restart into it (78 is a
    polling conflict's, in the unit's terms)."""
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    with pytest.raises(ChannelFatalError) as raised:
        read_password()
    assert raised.value.exit_code == EXIT_CONFIG == 2
    assert f"{PASSWORD_ENV} is not set" in str(raised.value)


def test_the_first_allowed_sender_is_the_owner() -> None:
    config = EmailConfig.model_validate({"allowed_senders": ["Ann@Example.org", "bo@example.org"]})
    assert config.allowed_ids() == ["ann@example.org", "bo@example.org"]


def test_init_offers_email(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path), "--email", "--model", "claude-sonnet-5-5"]) == 0
    config = tomllib.loads((tmp_path / "bot.toml").read_text())
    section = config["channels"]["email"]
    assert section["enabled"] is False, "pairing turns it on"
    assert section["allowed_senders"] == []
    assert section["imap_url"] == "imaps://mail.example.org"
    assert section["authserv_id"] == "mx.example.org"
    out = capsys.readouterr().out
    assert PASSWORD_ENV in out
    assert "thalos-bot email pair" in out


async def paired(
    world: World,
    path: Path,
    *,
    dropped: bool = False,
    first: str | None = None,
    mails: bool = True,
) -> EmailMessage | None:
    """``email pair`` for ``path`` (written here, its state folder beside it): the code
    mailed forged, by a robot, then by ann (lower-cased), who is added; ann's mail.
    ``dropped``: the server drops the connection pairing idles on before it comes;
    ``first``: ann mails this before the code; ``mails=False``: none of these (the test
    mails the code itself)."""
    config = world.config()
    path.write_text(
        '# my bot\nstate_dir = "."\n[channels.email]\nenabled = false  # on after pairing\n'
        f'address = "{world.bot}"\nimap_url = "{config.imap_url}"\n'
        f'smtp_url = "{config.smtp_url}"\nauthserv_id = "{config.authserv_id}"\n'
        f"allowed_senders = []\npoll_interval = {config.poll_interval}\n",
        encoding="utf-8",
    )
    lines: list[str] = []
    result: list[int] = []

    async def run() -> None:
        result.append(await pair(path, yes=True, ask=None, show=lines.append))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await world.wait_for(lambda: re.search(CODE, "\n".join(lines)))
        found = re.search(CODE, "\n".join(lines))
        assert found is not None
        if dropped:
            await world.wait_for(lambda: world.idling("bot"))
            world.kick("bot")
        mail = None
        if mails:
            await world.say(found.group(0), who="eve", authenticated=False)  # forged
            if first is not None:
                await world.say(first)
            await world.say(found.group(0), headers={"Auto-Submitted": "auto-replied"})
            mail = await world.say(found.group(0).lower())
        await world.wait_for(lambda: result)
    assert result == [0], lines
    return mail


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize(
    ("idle", "dropped"),
    [(True, False), (False, False), (True, True)],
    ids=["idle", "without_idle", "connection_dropped"],
)
async def test_pairing_adds_whoever_mails_the_code_authenticated(
    idle: bool,
    dropped: bool,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without IDLE, pairing looks at the folder every ``poll_interval``, as receiving
    does (it tried IDLE anyway, and failed). A connection the server drops while pairing
    waits is made again after a backoff, as the daemon's (before, pairing gave up)."""
    servers = request.getfixturevalue("mail_servers" if idle else "servers_without_idle")
    world = World.of(servers, tmp_path)
    monkeypatch.setenv(PASSWORD_ENV, world.password)
    path = tmp_path / "bot.toml"
    await paired(world, path, dropped=dropped)
    text = path.read_text(encoding="utf-8")
    assert f'allowed_senders = ["{world.user("ann")}"]' in text
    assert "enabled = true" in text
    [told] = world.answers()
    assert text_of(told) == PAIRED
    assert world.answers("eve") == []


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_daemon_does_not_answer_what_pairing_read(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon ran before, so its next start reads the folder from its stored cursor,
    below the mails pairing read: the code's is written down as done in its marks, and
    is not answered as a message (before, it was); ann's mail before the code is not
    pairing's: the daemon answers it, as the one come after."""
    monkeypatch.setenv(PASSWORD_ENV, world.password)
    async with running(world, tmp_path):  # type: ignore[arg-type]
        await world.started()
    code = await paired(world, tmp_path / "bot.toml", first="A question first")
    assert code is not None
    async with running(world, tmp_path):  # type: ignore[arg-type]
        later = await world.say("Hello again", reply_to=code)
        await world.wait_for(
            lambda: any(a["In-Reply-To"] == later["Message-ID"] for a in world.answers())
        )
    answered = [(a["In-Reply-To"], text_of(a)) for a in world.answers()]
    assert answered[0] == (code["Message-ID"], PAIRED)
    assert [text for _, text in answered[1:]] == [
        "You said: A question first",
        "You said: Hello again",
    ]
    assert answered[-1][0] == later["Message-ID"]


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_code_mailed_the_moment_it_shows_is_read(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code's mail delivered as soon as the code shows, before pairing's reader has
    logged in again: read all the same (pairing reads from where it stood when it showed
    the code). Before, the reader began above it, and pairing waited the code out."""
    monkeypatch.setenv(PASSWORD_ENV, world.password)
    waited = EmailSide.wait

    async def mailed_first(side: EmailSide, code: PairingCode) -> Found | None:
        await world.say(code.shown.lower())
        return await waited(side, code)

    monkeypatch.setattr(EmailSide, "wait", mailed_first)
    await paired(world, tmp_path / "bot.toml", mails=False)
    [told] = world.answers()
    assert text_of(told) == PAIRED


@pytest.mark.anyio
@pytest.mark.slow
async def test_doctor_logs_in_to_both_servers(
    mail_servers: MailServers,
    servers_without_idle: MailServers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World.of(mail_servers, tmp_path)
    config = world.config()
    monkeypatch.setenv(PASSWORD_ENV, world.password)
    checks = await email_checks(config, offline=False)
    assert [(c.name, c.outcome) for c in checks] == [
        ("Email IMAP login", "ok"),
        ("Email folder INBOX", "ok"),
        ("Email folder Sent", "ok"),
        ("Email SMTP login", "ok"),
    ]
    # Before the wrong password below, after which Dovecot's auth penalty slows logins.
    without = World.of(servers_without_idle, tmp_path).config()
    [idle] = [c for c in await email_checks(without, offline=False) if c.name == "Email IMAP IDLE"]
    assert (idle.outcome, idle.detail) == ("warn", "not offered: new mail is looked for every 1s")
    monkeypatch.setenv(PASSWORD_ENV, "wrong")
    checks = await email_checks(config, offline=False)
    assert [(c.name, c.outcome) for c in checks] == [
        ("Email IMAP login", "fail"),
        ("Email SMTP login", "fail"),
    ]
    assert all(PASSWORD_ENV in c.fix for c in checks)
    assert all("wrong" not in c.detail for c in checks)
    unreachable = config.model_copy(
        update={"imap_url": "imap+plain://127.0.0.1:1", "smtp_url": "smtp+plain://127.0.0.1:1"}
    )
    checks = await email_checks(unreachable, offline=False)
    assert [(c.outcome, c.fix) for c in checks] == [
        ("fail", "check imap_url, the network and the server's TLS certificate"),
        ("fail", "check smtp_url"),
    ]
