"""The email channel on real Dovecot and Postfix: answers in the thread, who is let in,
no loops, nothing lost or answered twice, commands and approvals by mail."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.channels.contract.daemon import running
from tests.channels.contract.process import daemon, write_config
from tests.email.servers import MailServers
from tests.email.world import World, text_of
from thalos_bot.channels.intake.held import HELD
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot_email import PASSWORD_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_mail_is_answered_once_in_its_thread(world: World, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("Use `make`, **then** test.")], [Say("Glad to help.")]])
    async with running(world, tmp_path, provider):  # type: ignore[arg-type]
        first = await world.say("How do I build it?")
        await world.wait_for(lambda: len(world.answers()) == 1)
        [answer] = world.answers()
        assert answer["Subject"] == "Re: A question"
        assert answer["In-Reply-To"] == first["Message-ID"]
        assert str(answer["References"]).split() == [first["Message-ID"]]
        assert answer["Auto-Submitted"] == "auto-replied"
        assert answer["From"] == world.bot
        assert answer.get_content_type() == "multipart/alternative"
        html = answer.get_body(("html",))
        assert html is not None
        assert "<b>then</b>" in html.get_content()
        assert "<code>make</code>" in html.get_content()
        assert text_of(answer) == "Use `make`, **then** test."
        await world.say("Thanks!\n\n> Use make, then test.", reply_to=answer)
        await world.wait_for(lambda: len(world.answers()) == 2)
    second = world.answers()[1]
    assert str(second["References"]).split()[0] == first["Message-ID"], "the same thread"
    assert provider.requests[1].messages[-1].content[0].text == "Thanks!"  # type: ignore[union-attr]
    assert len(provider.requests[1].messages) == 3, "the thread's conversation goes on"


async def test_without_idle_a_mail_is_answered(
    servers_without_idle: MailServers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that does not offer IDLE is looked at every ``poll_interval`` (1 s
    here: before, each minute, and this waited 30 s in vain)."""
    world = World.of(servers_without_idle, tmp_path)
    monkeypatch.setenv(PASSWORD_ENV, world.password)
    async with running(world, tmp_path):  # type: ignore[arg-type]
        asked = await world.say("Anyone there?")
        await world.wait_for(lambda: len(world.answers()) == 1)
    [answer] = world.answers()
    assert answer["In-Reply-To"] == asked["Message-ID"]
    assert text_of(answer) == "You said: Anyone there?"


async def test_a_connection_the_server_closes_during_idle_is_made_again(
    world: World, tmp_path: Path
) -> None:
    """A server's idle logout or restart closes the connection the bot waits on in
    IDLE: it connects again at once (before, it heard nothing until the IDLE's renewal,
    25 minutes on)."""
    async with running(world, tmp_path):  # type: ignore[arg-type]
        await world.wait_for(lambda: world.idling("bot"))
        world.kick("bot")
        asked = await world.say("Still there?")
        await world.wait_for(lambda: len(world.answers()) == 1)
    assert world.answers()[0]["In-Reply-To"] == asked["Message-ID"]


async def test_forged_or_unknown_senders_get_nothing(world: World, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("Only you.")]])
    async with running(world, tmp_path, provider):  # type: ignore[arg-type]
        await world.say("forged: no Authentication-Results", authenticated=False)
        fail = "mx.example.test; dkim=fail header.d=example.test; spf=softfail smtp.mailfrom=x"
        await world.say(
            "forged: results failed", authenticated=False, headers={"Authentication-Results": fail}
        )
        other = "mx.attacker.test; dkim=pass header.d=example.test"
        await world.say(
            "forged: another server's word",
            authenticated=False,
            headers={"Authentication-Results": other},
        )
        await world.say("a stranger, authenticated", who="eve")
        await world.say("the real one")
        await world.wait_for(lambda: len(world.answers()) == 1)
    assert len(provider.requests) == 1
    assert provider.requests[0].messages[-1].content[0].text == "the real one"  # type: ignore[union-attr]
    assert world.answers("eve") == []


async def test_robots_and_itself_are_never_answered(world: World, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("Hello human.")]])
    async with running(world, tmp_path, provider):  # type: ignore[arg-type]
        await world.say("out of office", headers={"Auto-Submitted": "auto-replied"})
        await world.say("newsletter", headers={"Precedence": "bulk"})
        await world.say("a list post", headers={"List-Id": "<dev.example.test>"})
        own = world.mail("me, myself")
        own.replace_header("From", world.bot)
        await world.say("bounce", headers={"Auto-Submitted": "no"}, who="mailer-daemon")
        world.append(own)
        await world.say("a person")
        await world.wait_for(lambda: len(world.answers()) == 1)
    assert [r.messages[-1].content[0].text for r in provider.requests] == ["a person"]  # type: ignore[union-attr]


async def test_mail_that_came_while_down_is_answered_once_after_the_start(
    world: World, tmp_path: Path
) -> None:
    async with running(world, tmp_path) as first:  # type: ignore[arg-type]
        await world.say("before")
        await world.wait_for(lambda: len(world.answers()) == 1)
    await world.say("while down")
    async with running(world, tmp_path, stores=first.stores) as second:  # type: ignore[arg-type]
        await world.wait_for(lambda: len(world.answers()) == 2)
        await world.say("after")
        await world.wait_for(lambda: len(world.answers()) == 3)
    assert [text_of(m) for m in world.answers()] == [
        "You said: before",
        "You said: while down",
        "You said: after",
    ]
    assert len(second.provider.requests) == 2, "nothing answered twice"


async def test_status_by_mail(world: World, tmp_path: Path) -> None:
    async with running(world, tmp_path) as daemon_:  # type: ignore[arg-type]
        await world.say("/status\n\n-- \nAnn")
        await world.wait_for(lambda: len(world.answers()) == 1)
    assert daemon_.provider.requests == [], "a command never reaches the model"
    assert world.answers()[0]["Subject"] == "Re: A question"


async def test_an_approval_by_reply(world: World, tmp_path: Path) -> None:
    write = CallTool("fs__write_file", {"path": "notes.md", "content": "milk"})
    provider = ScriptedProvider([[write], [Say("Written.")]])
    async with running(world, tmp_path, provider) as daemon_:  # type: ignore[arg-type]
        await world.say("note it down")
        await world.wait_for(lambda: len(world.answers()) == 1)
        [question] = world.answers()
        text = text_of(question)
        assert "fs__write_file" in text
        code = text.split("approve ", 1)[1][:4]
        await world.say(f"approve {code}", who="eve", reply_to=question)  # a stranger: nothing
        await world.say("approve ZZZZ", reply_to=question)  # no such question
        await world.say(f"approve {code}", reply_to=question)
        await world.wait_for(lambda: any(text_of(m) == "Written." for m in world.answers()))
    assert daemon_.files.calls == [("write_file", {"path": "notes.md", "content": "milk"})]


async def test_killed_mid_answer_answers_once(world: World, tmp_path: Path) -> None:
    """The real daemon, killed (SIGKILL) once its answer is out: after the restart the
    mail, read again (its cursor was not past it), is not answered a second time."""
    folder = tmp_path / "daemon"
    write_config(world, folder)  # type: ignore[arg-type]
    async with daemon(world, folder) as first:  # type: ignore[arg-type]
        await world.started()
        await world.say("remember the milk")
        await world.wait_for(lambda: len(world.answers()) == 1, timeout=60)
        await first.kill()
    async with daemon(world, folder):  # type: ignore[arg-type]
        await world.started()
        await world.say("and again")
        await world.wait_for(lambda: len(world.answers()) == 2, timeout=60)
    assert [text_of(m) for m in world.answers()] == [
        "You said: remember the milk",
        "You said: and again",
    ]


async def test_a_mail_too_big_is_said_so_and_not_read(world: World, tmp_path: Path) -> None:
    world.mail_max_bytes = 64 * 1024
    provider = ScriptedProvider([[Say("Small one read.")]])
    async with running(world, tmp_path, provider):  # type: ignore[arg-type]
        big = world.mail("look at this")
        big.add_attachment(bytes(200 * 1024), maintype="application", subtype="pdf")
        await world.say_mail(big)
        await world.wait_for(lambda: len(world.answers()) == 1)
        await world.say("and this")
        await world.wait_for(lambda: len(world.answers()) == 2)
    said = text_of(world.answers()[0])
    assert said.startswith("Your mail is too big for me to read (0.3 MB; the limit is 0.0625 MB)")
    assert provider.requests[0].messages[-1].content[0].text == "and this"  # type: ignore[union-attr]


async def test_a_mail_whose_attachment_is_refused_is_done_and_told_once(
    world: World, tmp_path: Path
) -> None:
    """The intake refuses the mail (a file it cannot read), says so, and the mail is
    finished: a restart neither reads it nor tells its sender again."""
    async with running(world, tmp_path) as first:  # type: ignore[arg-type]
        mail = world.mail("see the archive")
        mail.add_attachment(b"PK\x03\x04", maintype="application", subtype="zip", filename="a.zip")
        await world.say_mail(mail)
        await world.wait_for(lambda: len(world.answers()) == 1)
        await world.wait_for(lambda: world.marked(f"done {mail['Message-ID']}"))
    async with running(world, tmp_path, stores=first.stores) as second:  # type: ignore[arg-type]
        await world.say("and now?")
        await world.wait_for(lambda: len(world.answers()) == 2)
    told, answered = (text_of(m) for m in world.answers())
    assert "a.zip" in told
    assert answered == "You said: and now?"
    assert first.provider.requests == [], "the refused mail never reached the model"
    assert len(second.provider.requests) == 1


async def test_a_mail_with_too_many_attachments_is_said_so(world: World, tmp_path: Path) -> None:
    async with running(world, tmp_path) as daemon_:  # type: ignore[arg-type]
        mail = world.mail("all my notes")
        for n in range(HELD + 1):
            mail.add_attachment(f"note {n}", filename=f"n{n}.txt")
        await world.say_mail(mail)
        await world.wait_for(lambda: len(world.answers()) == 1)
    assert text_of(world.answers()[0]).startswith(f"Your mail has {HELD + 1} attachments;")
    assert daemon_.provider.requests == []


async def test_a_new_uidvalidity_with_no_recent_mail_reads_no_old_one(
    world: World, tmp_path: Path
) -> None:
    """The folder's mails renumbered (its cursor kept for another UIDVALIDITY) and none
    in the last days: the old mails are not read, only what comes next."""
    world.append(world.mail("from long ago"), days_ago=30)
    async with running(world, tmp_path) as first:  # type: ignore[arg-type]
        pass
    with sqlite3.connect(tmp_path / "thalos.db") as db:
        renamed = db.execute(
            "UPDATE chat_marks SET chat = 'uid 1 INBOX' WHERE chat LIKE 'uid % INBOX'"
        ).rowcount
    assert renamed == 1
    async with running(world, tmp_path, stores=first.stores) as second:  # type: ignore[arg-type]
        await world.say("and now")
        await world.wait_for(lambda: len(world.answers()) >= 1)
    assert [text_of(m) for m in world.answers()] == ["You said: and now"]
    assert len(second.provider.requests) == 1
