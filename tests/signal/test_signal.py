"""Signal's own cases over the fake signal-cli daemon, with the daemon under contract
(the plug-in, the pump, the runtime with a scripted model): an untrusted identity, a
daemon restart, a rate limit, our account's own transcripts, styles, and a send in
doubt whose recipient's phone is off."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.channels.contract.daemon import PNG, running
from tests.channels.contract.suite import texts
from tests.fakes.signal_cli import SignalCliFake
from tests.signal.test_contract import SignalContract
from thalos_bot.channels.approvals.reactions import CHOICES
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider

pytestmark = pytest.mark.anyio


def _trust(fake: SignalCliFake, number: str) -> None:
    """What the operator runs: ``signal-cli trust --trust-all-known-keys NUMBER``."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "trust",
        "params": {
            "account": fake.world.bot.number,
            "recipient": number,
            "trustAllKnownKeys": True,
        },
    }
    with socket.create_connection(("127.0.0.1", fake.port), timeout=10) as sock:
        sock.sendall(json.dumps(request).encode() + b"\n")
        assert json.loads(sock.makefile("rb").readline())["result"] == {}


async def test_an_untrusted_identity_is_refused_until_trusted(
    fake: SignalCliFake, tmp_path: Path
) -> None:
    transport = SignalContract(fake)
    fake.world.untrusted.add(fake.world.user.uuid)
    async with running(transport, tmp_path):
        await transport.say("hello")
        await transport.wait_for(lambda: fake.calls_of("send"))
        await transport.say("hello again")
        await transport.wait_for(lambda: len(fake.calls_of("send")) >= 2)
        assert transport.shown() == []
        _trust(fake, fake.world.user.number)
        await transport.say("and now?")
        await transport.wait_for(lambda: texts(transport.shown()) == ["You said: and now?"])


async def test_a_daemon_restart_loses_nothing(fake: SignalCliFake, tmp_path: Path) -> None:
    transport = SignalContract(fake)
    async with running(transport, tmp_path):
        await transport.say("before")
        await transport.wait_for(lambda: texts(transport.shown()) == ["You said: before"])
        fake.stop()
        await transport.say("while signal-cli restarts")  # waits on Signal's servers
        fake.start()
        await transport.wait_for(
            lambda: (
                texts(transport.shown())
                == ["You said: before", "You said: while signal-cli restarts"]
            )
        )
        assert fake.streams == 1


async def test_a_rate_limit_is_waited_out_for_its_retry_after(
    fake: SignalCliFake, tmp_path: Path
) -> None:
    transport = SignalContract(fake)
    async with running(transport, tmp_path):
        fake.rate_limited.append(2)
        await transport.say("one")
        await transport.wait_for(lambda: texts(transport.shown()) == ["You said: one"])
    assert len(fake.calls_of("send")) == 2
    assert fake.violations == []


async def test_our_accounts_own_transcripts_are_never_turns(
    fake: SignalCliFake, tmp_path: Path
) -> None:
    transport = SignalContract(fake)
    async with running(transport, tmp_path) as daemon:
        fake.sync_sent("a note the owner typed on their phone", fake.world.user)
        await transport.say("hi")
        await transport.wait_for(lambda: texts(transport.shown()) == ["You said: hi"])
    assert len(daemon.provider.requests) == 1


async def test_markdown_goes_as_style_ranges(fake: SignalCliFake, tmp_path: Path) -> None:
    transport = SignalContract(fake)
    provider = ScriptedProvider([[Say("Some **bold** and `code`, [docs](https://ex.org/d)")]])
    async with running(transport, tmp_path, provider):
        await transport.say("format")
        await transport.wait_for(transport.shown)
    [message] = fake.mine(fake.chat(fake.world.user))
    assert message.text == "Some bold and code, docs (https://ex.org/d)"
    assert message.styles == [(5, 4, "BOLD"), (14, 4, "MONOSPACE")]


async def test_a_decided_question_is_edited_to_its_outcome(
    fake: SignalCliFake, tmp_path: Path
) -> None:
    transport = SignalContract(fake)
    write = CallTool("fs__write_file", {"path": "notes.md", "content": "milk"})
    provider = ScriptedProvider([[write], [Say("Written.")]])
    async with running(transport, tmp_path, provider):
        await transport.say("note it down")
        await transport.wait_for(transport.asked)
        await transport.answer_approval("session")
        await transport.wait_for(lambda: "Written." in texts(transport.shown()))
        question = fake.mine(fake.chat(fake.world.user))[0]
        await transport.wait_for(lambda: question.edits == 1)
    assert CHOICES not in question.text
    assert "Approved for this session" in question.text


async def test_a_send_in_doubt_with_no_receipt_is_sent_again(
    fake: SignalCliFake, tmp_path: Path
) -> None:
    """The recipient's phone is off, so no receipt says the send arrived: after
    ``probe_wait`` the answer is sent again (a second copy rather than none)."""
    transport = SignalContract(fake)
    fake.offline.add(fake.world.user.uuid)
    async with running(transport, tmp_path):
        fake.lose_answers = 1
        await transport.say("are you there?")
        await transport.wait_for(lambda: len(transport.shown()) == 2)
    assert texts(transport.shown()) == ["You said: are you there?"] * 2


async def test_a_message_received_but_not_taken_at_a_stop_is_answered_after_it(
    fake: SignalCliFake, tmp_path: Path
) -> None:
    """signal-cli hands a message out once. One the bot stopped before taking (its
    attachment still being read) is answered by the next start, once."""
    transport = SignalContract(fake)
    provider = ScriptedProvider([[Say("a chart")], [Say("again?!")]])
    fake.attachments_served.clear()
    async with running(transport, tmp_path, provider):
        await transport.send_image(PNG, "what is this?")
        await transport.wait_for(lambda: fake.attachments_asked == 1)
    assert provider.requests == [], "stopped before the pump had it"
    fake.attachments_served.set()
    async with running(transport, tmp_path, provider):
        await transport.wait_for(lambda: texts(transport.shown()) == ["a chart"])
        await transport.say("/help")
        await transport.wait_for(lambda: len(transport.shown()) == 2)
    assert len(provider.requests) == 1
    assert texts(transport.shown())[0] == "a chart"
