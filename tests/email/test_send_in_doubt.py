"""A send in doubt settled on the real Dovecot: the answer's Message-ID found in the
sent folder is enough (the bot's folder is not searched after it); a copy filed late
is found at a later look, within the grace."""

from __future__ import annotations

import email.policy
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from tests.email.world import World
from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot_email import wire as wire_module
from thalos_bot_email.mailbox import Mailbox
from thalos_bot_email.threads import Thread, message_id
from thalos_bot_email.wire import EmailWire

T = TypeVar("T")

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_an_answer_found_in_the_sent_folder_is_looked_for_no_further(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = EmailWire(world.config(), world.password)
    await wire.prepare()
    sent = wire.config.sent_folder
    copy = world.mail("the answer")
    copy.replace_header("Message-ID", message_id("k1", world.bot))
    raw = copy.as_bytes(policy=email.policy.SMTP)
    await wire._imap_call(lambda m: m.append(sent, raw))
    searched: list[str] = []
    find = Mailbox.find

    async def noted(mailbox: Mailbox, folder: str, value: str, *headers: str) -> list[int]:
        searched.append(folder)
        return await find(mailbox, folder, value, *headers)

    monkeypatch.setattr(Mailbox, "find", noted)
    thread = Thread(world.user("ann"), "<root@example.test>")
    assert await wire.find(thread, "k1") == message_id("k1", world.bot)
    assert searched == [sent], "the bot's folder was not searched as well"


async def test_a_connection_the_server_dropped_between_answers_costs_nothing(
    world: World,
) -> None:
    """The server logs an idle IMAP connection out (Dovecot after 30 minutes): the
    answer after that keeps its copy in the sent folder, and its thread is found."""
    wire = EmailWire(world.config().model_copy(update={"timeout": 5.0}), world.password)
    await wire.prepare()
    question = world.mail("the question")
    world.append(question)
    thread = Thread(world.user("ann"), str(question["Message-ID"]))
    await wire.send(thread, Outgoing("first", "d1"))
    world.kick("bot")
    wire.latest.clear()  # as after a restart: the thread's latest mail is looked up
    await wire.send(thread, Outgoing("second", "d2"))
    wanted = message_id("d2", world.bot)
    assert await wire._imap_call(lambda m: m.find(wire.config.sent_folder, wanted, "Message-ID"))


async def test_a_copy_filed_late_is_found_and_one_never_filed_is_not(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy is looked for again until the grace has passed: one the server files
    after the first look is found; with the grace over, an absent one is not (the
    answer is then sent again)."""
    monkeypatch.setattr(wire_module, "LOOK_AGAIN", 0.0)
    wire = EmailWire(world.config(), world.password)
    thread = Thread(world.user("ann"), "<root@example.test>")
    looks: list[bool] = []
    look = wire._imap_call

    async def filed_after_the_first_look(call: Callable[[Mailbox], Awaitable[T]]) -> T:
        found = await look(call)
        looks.append(bool(found))
        if len(looks) == 1:
            copy = world.mail("the answer")
            copy.replace_header("Message-ID", message_id("late", world.bot))
            raw = copy.as_bytes(policy=email.policy.SMTP)
            await look(lambda m: m.append(wire.config.sent_folder, raw))
        return found

    await wire.prepare()
    monkeypatch.setattr(wire, "_imap_call", filed_after_the_first_look)
    assert await wire.find(thread, "late") == message_id("late", world.bot)
    assert looks == [False, True]
    monkeypatch.setattr(wire_module, "COPY_GRACE", 0.0)
    assert await wire.find(thread, "never") is None
