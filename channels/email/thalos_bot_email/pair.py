"""``thalos-bot email pair``: the kit's flow around email's part, which reads the bot's
folder with the daemon's loop (:class:`~.receiver.Reader`: a server down is tried again
after a backoff) for the code alone, from the mails come since it began: a new mail
holding it whose sender the trusted server authenticated (robots and the bot's own mail
never count; nobody is answered meanwhile). That mail is answered to say so, and
written down as done in the daemon's marks (:mod:`.ledger`), so the daemon does not
answer it as a message when it next reads the folder; the others pairing read are the
daemon's to answer (an allowed sender's mail is never lost to pairing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic_ns

import anyio

from thalos_bot.channels.admission.pair_command import PAIRED, Found, pair_command, told
from thalos_bot.channels.admission.pair_marks import daemon_marks
from thalos_bot.channels.admission.pairing import PairingCode, PairingError
from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot.domain.ids import ChannelId
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.ledger import Ledger
from thalos_bot_email.letter import Admitted
from thalos_bot_email.mailbox import Mailbox, MailboxError
from thalos_bot_email.manifest import manifest
from thalos_bot_email.plugin import read_password
from thalos_bot_email.receiver import Reader
from thalos_bot_email.threads import Thread
from thalos_bot_email.wire import EmailWire


@dataclass
class EmailSide(Reader):
    ledger: Ledger = field(default_factory=lambda: Ledger(None, ChannelId("email")))
    """In memory: the cursor starts at the folder's end."""
    kept: Ledger = field(kw_only=True, default_factory=lambda: Ledger(None, ChannelId("email")))
    """The daemon's: where the mails read are written down as done."""
    strangers: bool = field(kw_only=True, default=True)  # nobody is allowed yet
    code: PairingCode | None = None
    found: Found | None = None
    waiting: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    async def reach(self) -> str:
        config = self.config
        try:  # the login and the folder, checked before the code is shown
            mailbox = await Mailbox.login(config, self.password)
            try:  # the cursor from here: a mail that comes once the code shows is read
                validity, following = await mailbox.select(config.folder)
                await self.ledger.cursor(config.folder, validity, following - 1)
            finally:
                await mailbox.close()
        except MailboxError as exc:
            raise PairingError(f"the bot's mailbox: {exc}") from None
        if not config.authserv_id:
            raise PairingError("set authserv_id first (docs/email.md): it vouches for you")
        return f"{config.address} from your own address (the code in the subject or text)"

    async def wait(self, code: PairingCode) -> Found | None:
        self.code = code
        with anyio.move_on_after(code.remaining) as self.waiting:
            await self.run()
        return self.found

    async def _take(self, uid: int, mail: Admitted, too_big: int) -> bool:
        """The sender, when ``mail`` holds the code (in its first line or subject); that
        mail is done in the daemon's marks. Any other is left for the daemon, which
        answers it if its sender is allowed by then."""
        first = next((line for line in mail.text.splitlines() if line.strip()), "")
        code = self.code
        if code is not None and (code.redeem(first) or code.redeem(mail.latest.subject)):
            await self.kept.done(None, mail.message_id)
            reply_to = (Thread(mail.address, mail.root), mail.latest)
            self.found = Found(mail.address, mail.address, reply_to)
            self.waiting.cancel()
        return False

    async def tell(self, found: Found) -> bool:
        """Telling is a courtesy: whatever stops it, the pairing holds."""
        assert isinstance(found.reply_to, tuple)
        thread, latest = found.reply_to
        wire = EmailWire(self.config, self.password)
        wire.latest[thread] = latest
        return await told(wire.send(thread, Outgoing(PAIRED, f"pair{monotonic_ns()}")), Exception)


@asynccontextmanager
async def _side(config: EmailConfig, *, path: Path) -> AsyncIterator[EmailSide]:
    password = read_password()
    async with daemon_marks(path) as marks:
        yield EmailSide(config, password, kept=Ledger(marks, ChannelId("email")))


pair = pair_command(_side, manifest, with_path=True)
