"""Email's wire for the kit's delivery engine: one mail per answer through SMTP
submission, its Message-ID fixed from the engine's key. The envelope names the bot's own
address too, so the server files a copy in the bot's folder (read and ignored as the
bot's own): a send in doubt is found there, or in the sent folder, where a sure send's
copy is APPENDed (docs/email.md).
"""

from __future__ import annotations

import email.policy
from collections.abc import Awaitable, Callable
from dataclasses import replace
from email import message_from_bytes
from time import monotonic
from typing import TypeVar

import aiosmtplib
import anyio
import structlog

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.mailbox import Mailbox, MailboxError
from thalos_bot_email.threads import Latest, Thread, letter, message_id, root_of

log = structlog.get_logger(__name__)

T = TypeVar("T")

UNLIMITED = 10_000_000  # long answers are not split: one mail holds any answer
COPY_GRACE = 60.0
"""How long the copy of a send in doubt is looked for before it is sent again (the
server files it within moments; a queue may hold it a little)."""
LOOK_AGAIN = 3.0


class EmailWire:
    name = "email"
    limits = WireLimits(
        message_units=UNLIMITED,
        caption_units=UNLIMITED,
        chat_min_interval=1.0,
        global_rate=5.0,
        resend="find",
        typing_interval=3600.0,
    )

    def __init__(self, config: EmailConfig, password: str) -> None:
        self.config = config
        self._password = password
        self.latest: dict[Thread, Latest] = {}
        """Each thread's latest mail read (an answer replies to it)."""

    async def prepare(self) -> None:
        """Make the sent folder, when it is not there (when that fails, it is said)."""
        try:
            await self._imap_call(lambda m: m.create(self.config.sent_folder))
        except MailboxError as exc:
            log.warning("email_sent_folder_unchecked", error=str(exc))

    def render(self, source: str) -> str:
        return source  # the mail carries the Markdown as text and, rendered, as HTML

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, MailboxError):
            return Classified(Failure.NOT_SENT, str(exc))
        if isinstance(exc, aiosmtplib.SMTPAuthenticationError):
            return Classified(Failure.UNAUTHORIZED, f"login refused ({exc.code})")
        if isinstance(exc, aiosmtplib.SMTPConnectError | aiosmtplib.SMTPConnectTimeoutError):
            return Classified(Failure.NOT_SENT, type(exc).__name__)
        if isinstance(exc, aiosmtplib.SMTPResponseException):
            kind = Failure.NOT_SENT if 400 <= exc.code < 500 else Failure.REJECTED
            return Classified(kind, f"answered {exc.code}")
        if isinstance(exc, aiosmtplib.SMTPException | OSError | TimeoutError):
            return Classified(Failure.MAYBE_SENT, type(exc).__name__)
        return None

    async def upload(
        self, chat: Thread, image: ToolImage | VoiceClip, caption: Outgoing[None]
    ) -> str:
        """Attached to a mail whose text is the kit's caption (never empty)."""
        return await self.send(chat, replace(caption, plain=False), image)

    async def edit(self, chat: Thread, ref: str, message: Outgoing[None]) -> None:
        """A sent mail stays as it is (an approval's question too: the reply that decided
        it is the record)."""

    async def typing(self, chat: Thread, thread: str | None) -> None:
        """Mail has no typing indicator."""

    async def find(self, chat: Thread, key: str) -> str | None:
        wanted = message_id(key, self.config.address)
        folders = (self.config.sent_folder, self.config.folder)

        async def look(mailbox: Mailbox) -> bool:
            for folder in folders:  # the sent folder first: the inbox is looked in only after
                if await mailbox.find(folder, wanted, "Message-ID"):
                    return True
            return False

        deadline = monotonic() + COPY_GRACE
        while not await self._imap_call(look):
            if monotonic() > deadline:
                return None
            await anyio.sleep(LOOK_AGAIN)
        return wanted

    async def send(
        self, chat: Thread, message: Outgoing[None], image: ToolImage | VoiceClip | None = None
    ) -> str:
        """The mail answering the thread (with ``image`` attached), and its copy kept."""
        config = self.config
        mail = letter(config.address, chat.peer, await self._latest(chat), message, image)
        await aiosmtplib.send(
            mail,
            sender=config.address,
            recipients=[chat.peer, config.address],
            username=config.login,
            password=self._password,
            **config.smtp_options(),
        )
        sent = str(mail["Message-ID"])
        raw = mail.as_bytes(policy=email.policy.SMTP)
        try:
            await self._imap_call(lambda m: m.append(config.sent_folder, raw))
        except MailboxError as exc:
            log.warning("email_sent_copy_not_kept", folder=config.sent_folder, error=str(exc))
        return sent

    async def _latest(self, chat: Thread) -> Latest | None:
        known = self.latest.get(chat)
        if known is not None:
            return known
        folder = self.config.folder

        async def newest(mailbox: Mailbox) -> bytes | None:
            uids = await mailbox.find(folder, chat.root, "Message-ID", "References")
            return (await mailbox.fetch(max(uids), 0))[0] if uids else None

        raw = await self._imap_call(newest)
        found = root_of(message_from_bytes(raw)) if raw else None
        if found is None:
            log.warning("email_thread_unknown", thread=chat.root)
            return None
        self.latest[chat] = found[1]
        return found[1]

    async def _imap_call(self, call: Callable[[Mailbox], Awaitable[T]]) -> T:
        """``call(mailbox)`` on an IMAP connection of its own, closed after (as each
        send's SMTP one is): one kept open between answers is dropped by the server's
        idle logout, and its next command would wait out the timeout and fail."""
        mailbox = await Mailbox.login(self.config, self._password)
        try:
            return await call(mailbox)
        finally:
            await mailbox.close()
