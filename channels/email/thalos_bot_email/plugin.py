"""Registers the email channel under the ``thalos_bot.channels`` entry-point group: the
receiving side (:mod:`.receiver`) on one IMAP connection, the kit's engine over the
wire (:mod:`.wire`) on another, and approvals by reply."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog
from pydantic import BaseModel

from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.held import HeldFiles
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.secrets import secret_from_env
from thalos_bot.domain.ids import ChannelId
from thalos_bot_email import PASSWORD_ENV
from thalos_bot_email.approvals import EmailApprovals
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.ledger import EmailAdapter, Ledger
from thalos_bot_email.mailbox import MailboxError
from thalos_bot_email.receiver import Receiver
from thalos_bot_email.wire import EmailWire

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("email")
EXIT_EMAIL_CONFIG = 78
"""EX_CONFIG: the password is not set."""


def too_big(name: str, mb: str) -> str:
    return f"The attachment {name!r} is too big for me to read (the limit is {mb} MB)."


def read_password() -> str:
    return secret_from_env(PASSWORD_ENV, "email", "the bot mailbox's password", EXIT_EMAIL_CONFIG)


class EmailPlugin:
    name = "email"

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, EmailConfig)
        password = read_password()
        inlet = Inlet(CHANNEL)
        inlet.redelivers = True  # a mail no turn started for is read again at the next start
        ledger = Ledger(host.marks, CHANNEL)
        await ledger.load()
        wire = EmailWire(config, password)
        try:
            await wire.prepare()
        except MailboxError as exc:
            log.warning("email_sent_folder_unchecked", error=str(exc))
        try:
            async with anyio.create_task_group() as group:
                adapter = EmailAdapter(wire, group, ledger, channel_id=CHANNEL)
                seats = host.seats("email", config)
                approvals = EmailApprovals(adapter.put, seats, inlet.notify)
                adapter.asker = approvals.ask
                inlet.stopped = approvals.withdraw_all
                files = HeldFiles(config.attachment_max_bytes, too_big)
                intake = host.intake(
                    inlet, files, group, text_file_max_chars=config.text_file_max_chars
                )
                receiver = Receiver(
                    config, password, inlet, intake, files, wire, approvals, ledger, seats, group
                )
                group.start_soon(receiver.run, name="email-receiver")
                yield ChannelPair(
                    inlet,
                    adapter,
                    f"email: {config.address}, {config.folder} at {config.imap_url}",
                    receiving=receiver.link.receiving,
                    retrying=receiver.link.retrying,
                    health=receiver.link.health,
                )
                await receiver.settle()
                await adapter.drain_at_shutdown(config.drain_timeout)
                group.cancel_scope.cancel()
        finally:
            inlet.close()
            with anyio.CancelScope(shield=True):
                await wire.close()


plugin = EmailPlugin()
