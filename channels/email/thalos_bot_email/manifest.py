"""The email channel as the core sees it before it runs (no aioimaplib or aiosmtplib
import here): see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Secret, plug_in
from thalos_bot_email import PASSWORD_ENV
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.threads import Thread


def _seat(conversation_id: str) -> Seat[str]:
    return Seat(user=Thread.parse(conversation_id).peer)


def _summary(config: EmailConfig) -> str:
    return (
        f"{config.address or '(no address)'}: {config.folder} at {config.imap_url}, answers "
        f"via {config.smtp_url}, {len(config.allowed_senders)} allowed sender(s) "
        f"authenticated by {config.authserv_id or '(no authserv_id)'}, "
        f"{config.principal_note()}"
    )


manifest = plug_in(
    "email",
    EmailConfig,
    _summary,
    admission=Admission(_seat, "email", group_word="thread"),
    finds="your mail address",
    pair_step="finds your mail address, turns email on",
    order=60,
    question="Use email?",
    keys=(
        ("address", "bot@example.org", "the bot's own mailbox"),
        ("imap_url", "imaps://mail.example.org", "IMAP over TLS"),
        ("smtp_url", "smtps://mail.example.org", "SMTP submission over TLS"),
        ("authserv_id", "mx.example.org", "whose Authentication-Results are trusted"),
    ),
    secrets=(Secret(PASSWORD_ENV, "the bot mailbox's password (or an app password)"),),
    connection=lambda config: True,
    install_note=" (docs/email.md)",
)
