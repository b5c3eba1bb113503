"""The world the email channel lives in, on the real servers: the bot's mailbox, the
allowed correspondent (``ann``) and a stranger (``eve``), each a fresh user of the
session's Dovecot (a per-test prefix keeps tests apart).

Inbound mail is put into the bot's INBOX with IMAP APPEND, carrying the
``Authentication-Results`` header exactly as the receiving server writes it (authserv-id
first, then ``dkim=`` and ``spf=`` results with their properties): that header is what
the channel trusts, and no DNS, DKIM key or SPF record exists for the test domain for a
real check to write it. A forged mail is the same APPEND without it, or with a result
that fails. The bot's answers go out through Postfix's submission and arrive, by LMTP,
in the correspondent's Dovecot mailbox, where :meth:`World.answers` reads them.
"""

from __future__ import annotations

import contextlib
import email.policy
import imaplib
import itertools
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Self

import anyio

from tests.email.servers import AUTHSERV, DOMAIN, PASSWORD, MailServers
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.manifest import manifest as plugin

_worlds = itertools.count(1)


def authentication(domain: str, *, dkim: str = "pass", spf: str = "pass") -> str:
    return (
        f"{AUTHSERV}; dkim={dkim} (2048-bit key) header.d={domain} header.s=mail "
        f"header.b=AbCdEf12; spf={spf} (domain of ann@{domain} designates 192.0.2.7 as "
        f"permitted sender) smtp.mailfrom=ann@{domain}"
    )


@dataclass
class World:
    servers: MailServers
    folder: Path
    n: int
    password: str = PASSWORD
    plugin: object = plugin
    message_limit: int = 10_000_000
    sent: list[str] = field(default_factory=list)
    mail_max_bytes: int = 40 * 1024 * 1024
    smtp_port: int | None = None
    """Where the bot submits its mail (default: Postfix's submission port itself)."""
    imap_port: int | None = None
    """Where the bot reads its mail (default: Dovecot's IMAP port itself)."""
    settings: dict[str, object] = field(default_factory=dict)
    """More keys of the bot's ``[channels.email]``."""

    @classmethod
    def of(cls, servers: MailServers, folder: Path) -> Self:
        return cls(servers, folder, next(_worlds))

    def user(self, who: str) -> str:
        return f"{who}{self.n}@{DOMAIN}"

    @property
    def bot(self) -> str:
        return self.user("bot")

    def config(self) -> EmailConfig:
        return EmailConfig(
            enabled=True,
            imap_url=f"imap+plain://127.0.0.1:{self.imap_port or self.servers.imap_port}",
            smtp_url=f"smtp+plain://127.0.0.1:{self.smtp_port or self.servers.submission_port}",
            address=self.bot,
            allowed_senders=[self.user("ann")],
            authserv_id=AUTHSERV,
            drain_timeout=5.0,
            mail_max_bytes=self.mail_max_bytes,
            poll_interval=1.0,  # a server without IDLE (servers.without_idle) is looked at
            **self.settings,  # type: ignore[arg-type]
        )

    def environment(self) -> dict[str, str]:
        return {"THALOS_EMAIL_PASSWORD": self.password}

    # -- the servers ------------------------------------------------------------------

    def _imap(self, who: str) -> imaplib.IMAP4:
        client = imaplib.IMAP4("127.0.0.1", self.servers.imap_port)
        client.login(self.user(who) if "@" not in who else who, self.password)
        return client

    def append(self, mail: EmailMessage, days_ago: int = 0) -> None:
        """Put ``mail`` in the bot's INBOX, as come ``days_ago`` (its internal date)."""
        client = self._imap("bot")
        when = time.time() - days_ago * 86400 if days_ago else None
        try:
            client.append("INBOX", None, when, mail.as_bytes(policy=email.policy.SMTP))
        finally:
            client.logout()

    def kick(self, who: str) -> None:
        """Dovecot drops ``who``'s IMAP connections, as its idle logout does (exit 68:
        they had none)."""
        conf = self.servers.folder / "dovecot.conf"
        command = ["doveadm", "-c", str(conf), "kick", self.user(who)]
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        assert done.returncode in {0, 68}, done.stderr

    def idling(self, who: str) -> bool:
        """Whether Dovecot shows ``who``'s connection in IDLE (its process title, with
        ``verbose_proctitle``)."""
        wanted = f"[{self.user(who)} 127.0.0.1 IDLE]".encode()
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):  # a process that ended meanwhile
                if wanted in cmdline.read_bytes():
                    return True
        return False

    def mail(
        self,
        text: str,
        *,
        who: str = "ann",
        subject: str = "A question",
        reply_to: EmailMessage | None = None,
        authenticated: bool = True,
        headers: dict[str, str] | None = None,
    ) -> EmailMessage:
        mail = EmailMessage()
        if authenticated:
            mail["Authentication-Results"] = authentication(DOMAIN)
        mail["Return-Path"] = f"<{self.user(who)}>"
        mail["From"] = self.user(who)
        mail["To"] = self.bot
        if reply_to is not None:
            subject = str(reply_to["Subject"])
            subject = subject if subject.startswith("Re: ") else f"Re: {subject}"
        mail["Subject"] = subject
        mail["Message-ID"] = make_msgid(domain=DOMAIN)
        mail["Date"] = formatdate()
        if reply_to is not None:
            refs = str(reply_to.get("References", "")).split()
            mail["In-Reply-To"] = str(reply_to["Message-ID"])
            mail["References"] = " ".join([*refs, str(reply_to["Message-ID"])])
        for key, value in (headers or {}).items():
            mail[key] = value
        mail.set_content(text)
        self.sent.append(str(mail["Message-ID"]))
        return mail

    async def say(self, text: str, **kw: object) -> EmailMessage:
        mail = self.mail(text, **kw)  # type: ignore[arg-type]
        await self.say_mail(mail)
        return mail

    async def say_mail(self, mail: EmailMessage) -> None:
        """Deliver ``mail`` into the bot's INBOX (as the receiving server would)."""
        await anyio.to_thread.run_sync(self.append, mail)

    def answers(self, who: str = "ann") -> list[EmailMessage]:
        """The bot's mails in ``who``'s mailbox, in arrival order."""
        client = self._imap(who)
        try:
            client.select("INBOX")
            _, data = client.uid("SEARCH", "ALL")
            found = []
            for uid in data[0].split():
                _, fetched = client.uid("FETCH", uid, "(BODY.PEEK[])")
                raw = fetched[0][1]
                assert isinstance(raw, bytes)
                mail = message_from_bytes(raw, policy=email.policy.default)
                assert isinstance(mail, EmailMessage)
                found.append(mail)
            return found
        finally:
            client.logout()

    async def wait_for(self, predicate: Callable[[], object], timeout: float = 30.0) -> None:
        """Wait until ``predicate()`` (which reads the servers) holds."""
        with anyio.fail_after(timeout):
            while not await anyio.to_thread.run_sync(predicate):
                await anyio.sleep(0.1)

    def marked(self, prefix: str) -> bool:
        """Whether the channel's marks in the state folder hold one starting with
        ``prefix`` (``uid ``: its cursor; ``done <message-id>``: a mail dealt with)."""
        for db in self.folder.rglob("thalos.db"):
            try:
                with sqlite3.connect(db) as conn:
                    rows = conn.execute(
                        "SELECT chat FROM chat_marks WHERE channel_id = 'email'"
                    ).fetchall()
            except sqlite3.OperationalError:  # the daemon has not made its tables yet
                continue
            if any(str(chat).startswith(prefix) for (chat,) in rows):
                return True
        return False

    async def started(self) -> None:
        """Return once the channel has its cursor in the folder (what comes now is read)."""

        await self.wait_for(lambda: self.marked("uid "))


def text_of(mail: EmailMessage) -> str:
    part = mail.get_body(("plain",))
    assert part is not None
    content = part.get_content()
    assert isinstance(content, str)
    return content.strip()
