"""The email channel's runtime: the kit's engine, admission, approvals and intake
(:func:`~thalos_bot.channels.running.delivering`) over the wire, and the receiving side
on an IMAP connection of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from thalos_bot.channels.delivery.channel import rendering_for
from thalos_bot.channels.intake.held import HeldFiles
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Runtime, delivering
from thalos_bot.channels.secrets import secret_from_env
from thalos_bot.domain.ids import ChannelId
from thalos_bot_email import PASSWORD_ENV
from thalos_bot_email.approvals import EmailApprovals
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.ledger import Ledger
from thalos_bot_email.receiver import Receiver
from thalos_bot_email.threads import Thread
from thalos_bot_email.wire import EmailWire


def read_password() -> str:
    return secret_from_env(PASSWORD_ENV, "email", "the bot mailbox's password")


@asynccontextmanager
async def _open(config: EmailConfig, host: ChannelHost) -> AsyncIterator[ChannelPair]:
    password = read_password()
    ledger = Ledger(host.marks, ChannelId("email"))
    await ledger.load()
    wire = EmailWire(config, password)
    await wire.prepare()
    files = HeldFiles(config.attachment_max_bytes)
    async with delivering(
        host,
        config,
        wire,
        rendering_for(wire.limits, "off"),
        parse=Thread.parse,
        private=lambda thread: True,
        approvals=EmailApprovals,
        files=files,
    ) as served:
        served.inlet.redelivers = True  # a mail no turn started for is read again
        served.adapter.answering = lambda answered: ledger.done(None, answered)
        receiver = Receiver(config, password, ledger, served, files, wire)
        served.group.start_soon(receiver.run, name="email-receiver")
        where = f"{config.address}, {config.folder} at {config.imap_url}"
        yield served.pair(f"email: {where}", receiver.link)
        await receiver.settle()


plugin = Runtime(EmailConfig, _open)
