"""A send in doubt settled on the real Dovecot: the answer's Message-ID found in the
sent folder is enough (the bot's folder is not searched after it)."""

from __future__ import annotations

import email.policy

import pytest

from tests.email.world import World
from thalos_bot_email.threads import Thread, message_id
from thalos_bot_email.wire import EmailWire

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
