"""A send in doubt settled on the real Dovecot: the answer's Message-ID found in the
sent folder is enough (the bot's folder is not searched after it); a copy filed late
is found at a later look, within the grace."""

from __future__ import annotations

import email.policy
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from tests.email.world import World
from thalos_bot_email import wire as wire_module
from thalos_bot_email.mailbox import Mailbox
from thalos_bot_email.threads import Thread, message_id
from thalos_bot_email.wire import EmailWire

T = TypeVar("T")

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_an_answer_found_in_the_sent_folder_is_looked_for_no_further(
    world: World,
) -> None:
    wire = EmailWire(world.config(), world.password)
    try:
        await wire.prepare()
        sent = wire.config.sent_folder
        copy = world.mail("the answer")
        copy.replace_header("Message-ID", message_id("k1", world.bot))
        raw = copy.as_bytes(policy=email.policy.SMTP)
        await wire._imap_call(lambda m: m.append(sent, raw))
        thread = Thread(world.user("ann"), "<root@example.test>")
        assert await wire.find(thread, "k1") == message_id("k1", world.bot)
        assert wire._mailbox is not None
        assert wire._mailbox.selected == sent, "the bot's folder was not searched as well"
    finally:
        await wire.close()


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

    try:
        await wire.prepare()
        monkeypatch.setattr(wire, "_imap_call", filed_after_the_first_look)
        assert await wire.find(thread, "late") == message_id("late", world.bot)
        assert looks == [False, True]
        monkeypatch.setattr(wire_module, "COPY_GRACE", 0.0)
        assert await wire.find(thread, "never") is None
    finally:
        await wire.close()
