"""The receiving side: the mails above the cursor, in UID order (not marked seen), at
start and each time the folder may have changed, on one IMAP connection opened again
after a backoff when it fails (:class:`Reader`: the daemon's loop, and pairing's in
:mod:`.pair`). An admitted one (:mod:`.letter`) answers an approval or goes to the
kit's intake; the cursor passes a mail only once it is done (:mod:`.ledger`), so one a
kill cut short is read again at the next start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import anyio
import structlog

from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.channels.intake.held import HELD, HeldFiles
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.running import Delivering
from thalos_bot_email.approvals import EmailApprovals
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.ledger import Ledger
from thalos_bot_email.letter import Admitted, Refused, read
from thalos_bot_email.mailbox import Mailbox, MailboxError
from thalos_bot_email.threads import Thread
from thalos_bot_email.wire import EmailWire

log = structlog.get_logger(__name__)

RESCAN = timedelta(days=7)
"""After a UIDVALIDITY change, the mails of this many days are read again (those done
are known by their Message-ID); older ones are not."""


@dataclass
class Reader:
    """The folder read for admitted mails (from anyone when ``strangers``: pairing),
    each handed to :meth:`_take`, the daemon's or pairing's."""

    config: EmailConfig
    password: str = field(repr=False)
    ledger: Ledger
    link: Reconnecting = field(kw_only=True, default_factory=lambda: Reconnecting("email_imap"))
    strangers: bool = field(kw_only=True, default=False)

    async def run(self) -> None:
        while True:
            try:
                mailbox = await Mailbox.login(self.config, self.password)
                try:
                    await self._watch(mailbox)
                finally:
                    with anyio.CancelScope(shield=True):
                        await mailbox.close()
            except MailboxError as exc:
                await self.link.failed(str(exc))

    async def _watch(self, mailbox: Mailbox) -> None:
        folder = self.config.folder
        validity, following = await mailbox.select(folder)
        if await self.ledger.cursor(folder, validity, following - 1):
            since = (datetime.now(UTC) - RESCAN).strftime("%d-%b-%Y")
            log.warning("email_uidvalidity_changed", folder=folder, rescan_since=since)
            await self._read(mailbox, await mailbox.search("SINCE", since))
        self.link.opened()
        log.info("email_receiving", folder=folder, idle=mailbox.idles)
        while True:
            await self._read(mailbox, await mailbox.uids_after(self.ledger.read))
            self.link.health.ok()
            await mailbox.wait(self.config.idle_renew)

    async def _read(self, mailbox: Mailbox, uids: list[int]) -> None:
        config = self.config
        for uid in uids:
            raw, size = await mailbox.fetch(uid, config.mail_max_bytes)
            self.ledger.reading(uid)
            too_big = size if size > config.mail_max_bytes else 0
            allowed = None if self.strangers else config.allowed_senders
            mail = read(raw or b"", config.address, config.authserv_id, allowed, whole=not too_big)
            if isinstance(mail, Refused):
                log.info(mail.event, reason=mail.reason, uid=uid)
            if isinstance(mail, Refused) or not await self._take(uid, mail, too_big):
                await self.ledger.done(uid, mail.message_id)

    async def _take(self, uid: int, mail: Admitted, too_big: int) -> bool:
        """True when ``mail`` is not done yet once this returns."""
        raise NotImplementedError


@dataclass
class Receiver(Reader):
    served: Delivering[Thread, None, EmailApprovals]
    files: HeldFiles
    wire: EmailWire
    _waiting: dict[str, tuple[anyio.Event, int]] = field(default_factory=dict)
    """The mails with the pump, by Message-ID: their handled event and UID."""

    async def _take(self, uid: int, mail: Admitted, too_big: int) -> bool:
        """True when ``mail`` went to the pump (it is done once handled). ``too_big``:
        only its header was read, since it is that large. Its files are held until then
        (once there is room for them: see :class:`HeldFiles`)."""
        mid = mail.message_id
        if self.ledger.handled(mid):
            return False
        thread = Thread(mail.address, mail.root)
        self.wire.latest[thread] = mail.latest
        served, files = self.served, len(mail.files)
        if too_big:  # the sender is told why a mail is not read: too big, or too many files
            mb = self.config.mail_max_bytes / (1024 * 1024)
            told: str | None = (
                f"Your mail is too big for me to read ({too_big / (1024 * 1024):.1f} MB; "
                f"the limit is {mb:g} MB). Send it again with smaller attachments."
            )
        elif files > HELD:
            told = (
                f"Your mail has {files} attachments; I read at most {HELD} in one mail. "
                "Send them again over a few mails."
            )
        else:  # an approval's answer is told only that its question is closed
            told = served.approvals.answered(thread, mail.text, mail.address)
        if told is not None:
            if told:
                served.inlet.notify(thread.conversation, told)
            return False
        handled = anyio.Event()
        message = InboundMessage(
            served.inlet.channel_id,
            thread.conversation,
            served.seats.sender(mail.address),
            mail.text,
            mail.date,
            handled=handled,
            message_ref=mid,
            replayed_if_cut=True,  # read again at the next start unless done
        )
        await self.files.room([len(part.data) for part in mail.files])
        held = tuple(
            self.files.hold(part.data, part.name, part.mime, f"email:{mid}#{n}")
            for n, part in enumerate(mail.files)
        )
        self._waiting[mid] = (handled, uid)
        served.group.start_soon(self._when_handled, mid, held)
        served.intake.receive(message, held)
        return True

    async def _when_handled(self, mid: str, files: tuple[RemoteFile, ...]) -> None:
        handled, uid = self._waiting[mid]
        await self.files.release_when(handled, files)
        with anyio.CancelScope(shield=True):
            await self.ledger.done(uid, mid)
        self._waiting.pop(mid, None)

    async def settle(self) -> None:
        """At a stop, once the pump has: the mails it dealt with (a turn cut short by the
        stop included, whose answer said so) are written down as done, so the next start
        does not answer them again. A kill leaves them to be read again."""
        with anyio.CancelScope(shield=True):
            for mid, (handled, uid) in list(self._waiting.items()):
                if handled.is_set():
                    await self.ledger.done(uid, mid)
