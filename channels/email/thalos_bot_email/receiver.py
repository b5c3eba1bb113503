"""The receiving side: the folder read over IMAP, woken by IDLE.

At start, and each time IDLE says the folder changed, the mails above the cursor are
read in UID order (not marked seen). Each is admitted or not (:mod:`.letter`); an
admitted one is an approval's answer (decided here), or goes to the pump through the
kit's intake, its attachments with it. The cursor moves past a mail only once it is
done (:mod:`.ledger`), so a mail that came while the daemon was down, or whose turn a
kill cut short, is read again at the next start; one already answered is not answered
again. A server without IDLE is asked every :data:`POLL` seconds instead.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import parsedate_to_datetime

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.files import Intake, RemoteFile, WithFiles
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.ids import ChannelId
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot_email.approvals import NOT_AN_ANSWER, EmailApprovals
from thalos_bot_email.config import EmailConfig, endpoint
from thalos_bot_email.ledger import Ledger
from thalos_bot_email.letter import Part, authenticated, body, parse, robot, sender
from thalos_bot_email.mailbox import Mailbox, MailboxError
from thalos_bot_email.threads import Thread, ids, root_of
from thalos_bot_email.wire import EmailWire

log = structlog.get_logger(__name__)

POLL = 60.0
BACKOFF = (1.0, 60.0)
RESCAN = timedelta(days=7)
"""After a UIDVALIDITY change, the mails of this many days are read again (those done
are known by their Message-ID)."""


class Attachments:
    """The kit's file source: the parts of mails already read, held until fetched."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: dict[str, bytes] = {}

    def hold(self, message_id: str, parts: list[Part]) -> tuple[RemoteFile, ...]:
        files = []
        for n, part in enumerate(parts):
            ref = f"{message_id}#{n}"
            self._held[ref] = part.data
            files.append(
                RemoteFile(part.kind, ref, f"email:{ref}", len(part.data), part.name, part.mime)
            )
        return tuple(files)

    async def fetch(self, file: RemoteFile) -> bytes:
        data = self._held.pop(file.ref, b"")
        if len(data) > self.limit:
            mb = self.limit / (1024 * 1024)
            raise MediaRejectedError(
                f"The attachment {file.name!r} is too big for me to read (the limit is "
                f"{mb:g} MB); it was left out."
            )
        return data


class Receiver:
    def __init__(
        self,
        config: EmailConfig,
        password: str,
        *,
        channel: ChannelId,
        parts: tuple[Inlet, Intake, Attachments, EmailWire, EmailApprovals, Ledger],
        seats: Seats,
        group: TaskGroup,
    ) -> None:
        self.config = config
        self._password = password
        self._channel = channel
        self.inlet, self.intake, self.files, self.wire, self.approvals, self.ledger = parts
        self._seats = seats
        self._group = group
        self.health = ChannelHealth()
        self.receiving = anyio.Event()
        self.retrying = anyio.Event()
        self._waiting: dict[str, tuple[anyio.Event, int]] = {}
        """The mails with the pump, by Message-ID: their handled event and UID."""

    async def run(self) -> None:
        delay = BACKOFF[0]
        config = self.config
        while True:
            try:
                mailbox = await Mailbox.open(
                    endpoint(config.imap_url), config.login, self._password, config.timeout
                )
            except MailboxError as exc:
                self._failed(str(exc))
            else:
                try:
                    await self._watch(mailbox)
                except MailboxError as exc:
                    self._failed(str(exc))
                    delay = BACKOFF[0] if self.health.last_ok_at else delay
                finally:
                    with anyio.CancelScope(shield=True):
                        await mailbox.close()
            await anyio.sleep(delay)
            delay = min(delay * 2, BACKOFF[1])

    def _failed(self, what: str) -> None:
        log.warning("email_imap_failed", error=what)
        self.health.failed(what)
        self.retrying.set()

    async def _watch(self, mailbox: Mailbox) -> None:
        folder = self.config.folder
        selected = await mailbox.select(folder)
        ledger = self.ledger
        if ledger.cursor(folder, selected.validity) is None:
            if ledger.knew_other_validity(folder):
                since = (datetime.now(UTC) - RESCAN).strftime("%d-%b-%Y")
                log.warning("email_uidvalidity_changed", folder=folder, rescan_since=since)
                uids = await mailbox.find_since(since)
                await self._read(mailbox, uids)
            else:
                log.info("email_cursor_started", folder=folder, at=selected.next_uid - 1)
                await ledger.start_at(selected.next_uid - 1)
        self.health.ok()
        self.receiving.set()
        log.info("email_receiving", folder=folder, idle=mailbox.idles)
        while True:
            await self._read(mailbox, await mailbox.uids_after(self.ledger.read))
            self.health.ok()
            if mailbox.idles:
                await mailbox.wait(self.config.idle_renew)
            else:
                await anyio.sleep(POLL)
                await mailbox.noop()

    async def _read(self, mailbox: Mailbox, uids: list[int]) -> None:
        limit = self.config.mail_max_bytes
        for uid in uids:
            raw, size = await mailbox.fetch(uid, limit)
            self.ledger.reading(uid)
            mail = parse(raw or b"")
            try:
                taken = mail is not None and self._take(uid, mail, size if size > limit else 0)
            except Exception:
                log.exception("email_mail_unreadable", uid=uid)
                taken = False
            if not taken:
                await self.ledger.done(uid, _id(mail) if mail is not None else None)

    def _take(self, uid: int, mail: EmailMessage, too_big: int) -> bool:
        """Admit ``mail``; True when it went to the pump (it is done once handled).
        ``too_big``: only its header was read, since it is that large."""
        mid = _id(mail)
        if mid is None or self.ledger.handled(mid):
            return False
        config = self.config
        why = robot(mail, config.address)
        address = sender(mail)
        if why is not None or address is None:
            log.info("email_ignored_robot", reason=why)
            return False
        if address not in config.allowed_senders:
            log.info("email_from_stranger")
            return False
        if not authenticated(mail, config.authserv_id):
            log.warning("email_not_authenticated", authserv_id=config.authserv_id)
            return False
        found = root_of(mail)
        if found is None:
            return False
        root, latest = found
        thread = Thread(address, root)
        self.wire.latest[thread] = latest
        if too_big:
            mb = self.config.mail_max_bytes / (1024 * 1024)
            self.inlet.notify(
                thread.conversation,
                f"Your mail is too big for me to read ({too_big / (1024 * 1024):.1f} MB; "
                f"the limit is {mb:g} MB). Send it again with smaller attachments.",
            )
            return False
        text, parts = body(mail)
        said = self.approvals.answer(thread, text, address)
        if said != NOT_AN_ANSWER:
            if said is not None:
                self.inlet.notify(thread.conversation, said)
            return False
        handled = anyio.Event()
        message = InboundMessage(
            self._channel,
            thread.conversation,
            self._seats.sender(address),
            _command_or_text(text),
            _date(mail),
            handled=handled,
            message_ref=mid,
        )
        self._waiting[mid] = (handled, uid)
        self._group.start_soon(self._when_handled, handled, uid, mid)
        if parts:
            self.intake.take(WithFiles(message, self.files.hold(mid, parts)))
        else:
            self.intake.pass_text(message)
        return True

    async def _when_handled(self, handled: anyio.Event, uid: int, mid: str) -> None:
        await handled.wait()
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


def _id(mail: EmailMessage) -> str | None:
    found = ids(str(mail.get("Message-ID", "")))
    return found[0] if found else None


def _command_or_text(text: str) -> str:
    """A slash command is the first line; the rest (a signature) is not its argument."""
    if text.startswith("/"):
        return text.split("\n", 1)[0].strip()
    mine, _, _ = text.partition("\n-- \n")
    return mine.strip()


def _date(mail: EmailMessage) -> datetime:
    try:
        when = parsedate_to_datetime(str(mail.get("Date", "")))
    except (TypeError, ValueError):
        return datetime.now(UTC)
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
