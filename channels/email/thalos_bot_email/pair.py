"""``thalos-bot email pair``: the kit's flow around email's part: it watches the bot's
folder for a new mail holding the code whose sender the trusted server authenticated
(robots and the bot's own mail never count), then answers that mail to say so."""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass, field
from time import monotonic_ns

import anyio

from thalos_bot.channels.admission.pair_command import PAIRED, Found, pair_command, told
from thalos_bot.channels.admission.pairing import PairingCode, PairingError
from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.letter import Refused, read
from thalos_bot_email.mailbox import Mailbox, MailboxError
from thalos_bot_email.manifest import manifest
from thalos_bot_email.plugin import read_password
from thalos_bot_email.threads import Thread
from thalos_bot_email.wire import EmailWire


@dataclass
class EmailSide:
    config: EmailConfig
    password: str = field(repr=False)
    mailbox: Mailbox | None = None
    after: int = 0

    async def reach(self) -> str:
        config = self.config
        try:
            self.mailbox = await Mailbox.login(config, self.password)
            _, following = await self.mailbox.select(config.folder)
            self.after = following - 1
        except MailboxError as exc:
            raise PairingError(f"the bot's mailbox: {exc}") from None
        if not config.authserv_id:
            raise PairingError("set authserv_id first (docs/email.md): it vouches for you")
        return f"{config.address} from your own address (the code in the subject or text)"

    async def wait(self, code: PairingCode) -> Found | None:
        assert self.mailbox is not None
        with anyio.move_on_after(code.remaining):
            try:
                while True:
                    for uid in await self.mailbox.uids_after(self.after):
                        self.after = uid
                        raw, _ = await self.mailbox.fetch(uid, self.config.mail_max_bytes)
                        if (found := self._heard(raw or b"", code)) is not None:
                            return found
                    await self.mailbox.wait(min(code.remaining, self.config.idle_renew))
            except MailboxError as exc:
                raise PairingError(f"the bot's mailbox: {exc}") from None
        return None

    def _heard(self, raw: bytes, code: PairingCode) -> Found | None:
        """Who sent ``raw``, when it holds the code (in its first line or subject) and
        the trusted server authenticated them."""
        config = self.config
        mail = read(raw, config.address, config.authserv_id, None)
        if isinstance(mail, Refused):
            return None
        first = next((line for line in mail.text.splitlines() if line.strip()), "")
        if not code.redeem(first) and not code.redeem(mail.latest.subject):
            return None
        return Found(mail.address, mail.address, (Thread(mail.address, mail.root), mail.latest))

    async def tell(self, found: Found) -> bool:
        """Telling is a courtesy: whatever stops it, the pairing holds."""
        assert isinstance(found.reply_to, tuple)
        thread, latest = found.reply_to
        wire = EmailWire(self.config, self.password)
        wire.latest[thread] = latest
        return await told(wire.send(thread, Outgoing(PAIRED, f"pair{monotonic_ns()}")), Exception)

    async def aclose(self) -> None:
        if self.mailbox is not None:
            await self.mailbox.close()


pair = pair_command(lambda config: aclosing(EmailSide(config, read_password())), manifest)
