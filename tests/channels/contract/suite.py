"""The contract every transport passes: subclass :class:`ContractSuite` and give it a
``transport`` fixture (a :class:`~tests.channels.contract.transport.ContractTransport`
over your fake or real server). See README.md."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import anyio
import pytest

from tests.channels.contract.daemon import PNG, Daemon, running
from tests.channels.contract.process import daemon, write_config
from tests.channels.contract.transport import ContractTransport, Shown, Where
from tests.media.transcribing import transcribing
from thalos_bot.channels import notices
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.messages import ImageBlock
from thalos_bot.providers.scripted import Await, CallTool, Hang, Say, ScriptedProvider

MARKDOWN = "Some **bold**, some `code`, and [a link](https://example.org/x)."
MARKDOWN_SHOWN = "Some bold, some code, and a link."
MARKDOWN_SHOWN_BARE_LINK = "Some bold, some code, and a link (https://example.org/x)."
"""Where the platform has no link with a label: the label, then the address."""


def texts(shown: list[Shown]) -> list[str]:
    return [message.text for message in shown if not message.image]


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.anyio
class ContractSuite:
    """One test per case of issue 23's contract. Every wait is on the server's state."""

    async def test_text(self, transport: ContractTransport, tmp_path: Path) -> None:
        async with running(transport, tmp_path):
            await transport.say("hello there")
            await transport.wait_for(lambda: texts(transport.shown()) == ["You said: hello there"])

    async def test_long_text(self, transport: ContractTransport, tmp_path: Path) -> None:
        limit = transport.message_limit
        words = " ".join(f"word{n}" for n in range(limit * 3 // 6))
        provider = ScriptedProvider([[Say(words)]])
        async with running(transport, tmp_path, provider):
            await transport.say("write a lot")

            def whole() -> bool:
                return _squeeze("".join(texts(transport.shown()))) == _squeeze(words)

            await transport.wait_for(whole)
        shown = texts(transport.shown())
        assert len(shown) >= 3, "split at the transport's limit"
        assert all(len(text.encode("utf-16-le")) // 2 <= limit for text in shown)

    async def test_markdown(self, transport: ContractTransport, tmp_path: Path) -> None:
        provider = ScriptedProvider([[Say(MARKDOWN)]])
        async with running(transport, tmp_path, provider):
            await transport.say("format something")
            labelled = getattr(transport, "labelled_links", True)
            shown = MARKDOWN_SHOWN if labelled else MARKDOWN_SHOWN_BARE_LINK
            await transport.wait_for(lambda: texts(transport.shown()) == [shown])
        [message] = transport.shown()
        assert {"bold", "code"} <= message.styles
        assert ("link" in message.styles) == labelled

    async def test_a_flood_control_wait(self, transport: ContractTransport, tmp_path: Path) -> None:
        async with running(transport, tmp_path):
            transport.flood_wait(1.0)
            await transport.say("are you there?")
            await transport.wait_for(
                lambda: texts(transport.shown()) == ["You said: are you there?"]
            )
        assert transport.sent_during_wait() == 0

    async def test_a_send_in_doubt_shows_once(
        self, transport: ContractTransport, tmp_path: Path
    ) -> None:
        async with running(transport, tmp_path):
            transport.in_doubt()
            await transport.say("only once please")
            await transport.wait_for(
                lambda: texts(transport.shown()) == ["You said: only once please"]
            )
            await transport.say("and again")
            both = ["You said: only once please", "You said: and again"]
            await transport.wait_for(lambda: texts(transport.shown()) == both)
        assert texts(transport.shown()) == both, "the send in doubt shown once"

    async def test_a_send_refused_with_a_5xx_shows_once(
        self, transport: ContractTransport, tmp_path: Path
    ) -> None:
        """Fault matrix: the send is answered 5xx by a gateway and never carried out;
        it is made again, and shown once."""
        async with running(transport, tmp_path):
            transport.refuse_next_send()
            await transport.say("through the gateway")
            await transport.wait_for(
                lambda: texts(transport.shown()) == ["You said: through the gateway"]
            )
            await transport.say("and again")
            both = ["You said: through the gateway", "You said: and again"]
            await transport.wait_for(lambda: texts(transport.shown()) == both)

    async def test_two_chats_stream_while_a_send_is_in_doubt(
        self, transport: ContractTransport, tmp_path: Path
    ) -> None:
        """Fault matrix: one chat's send is in doubt while another streams an answer of
        its own; each answer is shown once, whole, in its own chat."""
        long = " ".join(f"word{n}" for n in range(60))
        provider = ScriptedProvider(
            [[Say(*long.split(" "), delay=0.01)], [Say(*long.split(" "), delay=0.01)]]
        )
        async with running(transport, tmp_path, provider):
            transport.in_doubt()
            await transport.say("first")
            await transport.say("second", where="group", mention=True)

            def whole(where: Where) -> bool:
                return [_squeeze(t) for t in texts(transport.shown(where=where))] == [
                    _squeeze(long)
                ]

            await transport.wait_for(lambda: whole("dm") and whole("group"))
        assert [_squeeze(t) for t in texts(transport.shown())] == [_squeeze(long)]
        assert [_squeeze(t) for t in texts(transport.shown(where="group"))] == [_squeeze(long)]

    async def test_a_restart_mid_stream(self, transport: ContractTransport, tmp_path: Path) -> None:
        """Fault matrix: the daemon stops while an answer streams. What the chat shows of
        it never looks complete (it ends saying the answer was cut), and after the
        restart the next message is answered once, with nothing of the cut answer sent
        again."""
        provider = ScriptedProvider([[Say("Working on it"), Hang()], [Say("Back again.")]])
        async with running(transport, tmp_path, provider) as first:
            await transport.say("long job")
            await transport.wait_for(lambda: len(provider.requests) == 1)
        cut = texts(transport.shown())
        assert "Working on it" not in cut, f"a cut answer says it was cut: {cut}"
        assert all("Working on it" in t or "restart" in t for t in cut), cut
        async with running(transport, tmp_path, provider, stores=first.stores):
            await transport.say("are you back?")
            await transport.wait_for(lambda: "Back again." in texts(transport.shown()))
        assert texts(transport.shown()) == [*cut, "Back again."]

    async def test_a_flood_wait_mid_stream(
        self, transport: ContractTransport, tmp_path: Path
    ) -> None:
        """Fault matrix: the platform's flood signal comes while a long answer streams.
        Nothing more is sent to the chat until the wait is over, and the answer ends
        whole, each part once."""
        words = [f"word{n} " for n in range(transport.message_limit * 2 // 6)]
        half = len(words) // 2
        reached, go_on = anyio.Event(), anyio.Event()

        async def pause() -> None:
            reached.set()
            await go_on.wait()

        provider = ScriptedProvider(
            [[Say(*words[:half], delay=0.001), Await(pause), Say(*words[half:], delay=0.001)]]
        )
        async with running(transport, tmp_path, provider):
            await transport.say("a long answer please")
            with anyio.fail_after(30):
                await reached.wait()
            transport.flood_wait(1.0)
            go_on.set()

            def whole() -> bool:
                return _squeeze("".join(texts(transport.shown()))) == _squeeze("".join(words))

            await transport.wait_for(whole, timeout=30)
        assert transport.sent_during_wait() == 0
        assert transport.flooded(), "the flood signal was given (the case is not empty)"

    async def test_killed_while_the_final_is_sent(
        self, transport: ContractTransport, tmp_path: Path
    ) -> None:
        """Fault matrix: the real daemon is killed (SIGKILL) once the server has carried
        out its final's send, whose answer it never got; after a restart on the same
        state folder the answer is shown exactly once, and the next message answered."""
        folder = tmp_path / "daemon"
        write_config(transport, folder)
        answer = "You said: remember the milk"
        async with daemon(transport, folder) as first:
            await transport.started()
            transport.in_doubt()
            await transport.say("remember the milk")
            await transport.wait_for(lambda: answer in texts(transport.shown()), timeout=60)
            await first.kill()
        async with daemon(transport, folder):
            await transport.started()
            await transport.say("and again")
            both = [answer, "You said: and again"]
            await transport.wait_for(lambda: texts(transport.shown()) == both, timeout=60)
        assert texts(transport.shown()) == both, "shown exactly once across the kill"

    async def test_killed_mid_turn(self, transport: ContractTransport, tmp_path: Path) -> None:
        """Fault matrix: the real daemon is killed (SIGKILL) while a turn runs (the echo
        model streams a long answer for seconds). After a restart on the same state
        folder the message is neither answered twice nor passed over in silence: its
        conversation is told to send it again, or, where the transport reads it again
        (``replays_cut_turns``: email), it is answered once."""
        folder = tmp_path / "daemon"
        write_config(transport, folder)
        question = " ".join(f"w{n}" for n in range(150))  # 0.03 s a word: 4.5 s of echo
        answer = f"You said: {question}"
        told = notices.interrupted_by_restart()
        replays = getattr(transport, "replays_cut_turns", False)
        async with daemon(transport, folder) as first:
            await transport.started()
            await transport.say(question)
            await _turn_under_way(folder / "state" / "thalos.db")
            await first.kill()
        async with daemon(transport, folder):
            await transport.started()
            if replays:
                await transport.wait_for(lambda: answer in texts(transport.shown()), timeout=60)
            else:
                await transport.wait_for(
                    lambda: any(told in t for t in texts(transport.shown())), timeout=60
                )
            await transport.say("and again")
            await transport.wait_for(
                lambda: "You said: and again" in texts(transport.shown()), timeout=60
            )
        shown = texts(transport.shown())
        assert shown.count(answer) == (1 if replays else 0), shown
        assert sum(told in t for t in shown) == (0 if replays else 1), shown
        assert shown[-1] == "You said: and again", shown

    async def test_a_stranger_is_never_answered(
        self, transport: ContractTransport, tmp_path: Path
    ) -> None:
        async with running(transport, tmp_path) as daemon:
            await transport.say("let me in", who="stranger")
            await transport.say("hi")
            await transport.wait_for(lambda: texts(transport.shown()) == ["You said: hi"])
        assert transport.shown(who="stranger") == []
        assert len(daemon.provider.requests) == 1

    async def test_a_group_without_and_with_a_mention(
        self, transport: ContractTransport, tmp_path: Path
    ) -> None:
        async with running(transport, tmp_path) as daemon:
            await transport.say("talking among ourselves", where="group")
            await transport.say("what is 2+2?", where="group", mention=True)
            await transport.wait_for(
                lambda: texts(transport.shown(where="group")) == ["You said: what is 2+2?"]
            )
        assert len(daemon.provider.requests) == 1

    async def test_an_attachment_in(self, transport: ContractTransport, tmp_path: Path) -> None:
        async with running(transport, tmp_path) as daemon:
            await transport.send_image(PNG, "what is this?")
            await transport.wait_for(
                lambda: texts(transport.shown()) == ["You said: what is this?"]
            )
        last = daemon.provider.requests[-1].messages[-1]
        assert any(isinstance(block, ImageBlock) for block in last.content)

    async def test_a_voice_note_in(
        self, transport: ContractTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Transcribed through ``[transcription]``, shown back, and answered as text."""
        with transcribing(monkeypatch, "what time is it") as (stt, settings):
            async with running(transport, tmp_path, settings=settings):
                await transport.send_voice(b"OggS" + bytes(200), 1.5)
                await transport.wait_for(
                    lambda: (
                        texts(transport.shown())
                        == ["🎤 what time is it", "You said: what time is it"]
                    )
                )
        assert len(stt.requests) == 1

    async def test_a_voice_note_is_answered_in_voice_too(
        self, transport: ContractTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``[speech]`` on: the answer to a voice note is its text, then the platform's
        voice message (the local engine, for real); a text is answered as text only."""
        with transcribing(monkeypatch, "what time is it") as (_, settings):
            async with running(transport, tmp_path, settings=settings, speaking=True):
                await transport.say("hello in writing")
                await transport.wait_for(
                    lambda: "You said: hello in writing" in texts(transport.shown())
                )
                await transport.send_voice(b"OggS" + bytes(200), 1.5)
                await transport.wait_for(transport.voices)
                said = texts(transport.shown())
                await _clips_delivered(tmp_path)
        assert "You said: what time is it" in said
        [seconds] = transport.voices()  # one clip, after the text; none for the text
        assert seconds is None or seconds >= 1

    async def test_an_attachment_out(self, transport: ContractTransport, tmp_path: Path) -> None:
        provider = ScriptedProvider([[CallTool("draw__chart")], [Say("Here it is.")]])
        async with running(transport, tmp_path, provider):
            await transport.say("chart please")
            await transport.wait_for(lambda: any(m.image for m in transport.shown()))
            await transport.wait_for(lambda: "Here it is." in texts(transport.shown()))
        assert sum(message.image for message in transport.shown()) == 1

    async def test_an_approval(self, transport: ContractTransport, tmp_path: Path) -> None:
        write = CallTool("fs__write_file", {"path": "notes.md", "content": "milk"})
        provider = ScriptedProvider([[write], [Say("Written.")]])
        async with running(transport, tmp_path, provider) as daemon:
            await transport.say("note it down")
            await transport.wait_for(transport.asked)
            await transport.answer_approval("deny", who="stranger")  # harmless
            await transport.answer_approval("once")
            await transport.wait_for(lambda: "Written." in texts(transport.shown()))
        assert daemon.files.calls == [("write_file", {"path": "notes.md", "content": "milk"})]

    async def test_a_denied_approval(self, transport: ContractTransport, tmp_path: Path) -> None:
        write = CallTool("fs__write_file", {"path": "notes.md", "content": "milk"})
        provider = ScriptedProvider([[write], [Say("Not written.")]])
        async with running(transport, tmp_path, provider) as daemon:
            await transport.say("note it down")
            await transport.wait_for(transport.asked)
            await transport.answer_approval("deny")
            await transport.wait_for(lambda: "Not written." in texts(transport.shown()))
        assert daemon.files.calls == []

    async def test_a_cancel(self, transport: ContractTransport, tmp_path: Path) -> None:
        provider = ScriptedProvider([[Say("Thinking about it"), Hang()]])
        cancelled = notices.turn_failed(AgentError(ErrorCode.CANCELLED))
        async with running(transport, tmp_path, provider):
            await transport.say("think hard")
            await transport.wait_for(lambda: len(provider.requests) == 1)
            await transport.say("/cancel")
            await transport.wait_for(
                lambda: any(t.endswith(cancelled) for t in texts(transport.shown()))
            )
            await transport.say("still there?")
            await transport.wait_for(lambda: "You said: still there?" in texts(transport.shown()))

    async def test_a_restart(self, transport: ContractTransport, tmp_path: Path) -> None:
        async with running(transport, tmp_path) as first:
            await transport.say("before")
            await transport.wait_for(lambda: texts(transport.shown()) == ["You said: before"])
        await transport.say("while down")
        async with running(transport, tmp_path, stores=first.stores) as second:
            await transport.wait_for(
                lambda: texts(transport.shown()) == ["You said: before", "You said: while down"]
            )
            await transport.say("after")
            # The whole list, finals included: a streaming transport shows the third
            # message before its final text is in it.
            await transport.wait_for(
                lambda: (
                    texts(transport.shown())
                    == ["You said: before", "You said: while down", "You said: after"]
                )
            )
        assert len(second.provider.requests) == 2, "nothing replayed, nothing lost"


__all__ = ["ContractSuite", "Daemon"]


async def _turn_under_way(database: Path) -> None:
    """A turn is noted in the daemon's turn journal (a subprocess's database gives no
    event to wait on: it is looked at, bounded)."""
    with anyio.fail_after(30):
        while True:
            try:
                with sqlite3.connect(database) as db:
                    if db.execute("SELECT 1 FROM turns_begun").fetchall():
                        return
            except sqlite3.OperationalError:  # not made yet, or locked by the daemon
                pass
            await anyio.sleep(0.02)


async def _clips_delivered(state: Path) -> None:
    """The clip went through the outbox: its ``voice`` row is delivered (confirmed by
    the channel once the upload returned) and its audio file removed."""
    folder = state / "voice-clips"
    with anyio.fail_after(15):
        while folder.is_dir() and any(folder.iterdir()):
            await anyio.sleep(0.05)  # the confirmation follows the upload's answer
    with sqlite3.connect(state / "thalos.db") as db:
        rows = db.execute("SELECT kind, state FROM outbox").fetchall()
    assert rows == [("voice", "delivered")]
