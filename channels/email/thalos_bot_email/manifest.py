"""The email channel as the core sees it before it runs (no aioimaplib or aiosmtplib
import here): see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from pydantic import BaseModel

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Manifest, Pairing, Secret, Setup
from thalos_bot_email import PASSWORD_ENV
from thalos_bot_email.config import EmailConfig
from thalos_bot_email.threads import Thread


def _seat(conversation_id: str) -> Seat[str]:
    return Seat(user=Thread.parse(conversation_id).peer)


def _summary(config: BaseModel) -> str:
    assert isinstance(config, EmailConfig)
    roles = ", ".join(config.roles) or "none"
    return (
        f"{config.address or '(no address)'}: {config.folder} at {config.imap_url}, answers "
        f"via {config.smtp_url}, {len(config.allowed_senders)} allowed sender(s) "
        f"authenticated by {config.authserv_id or '(no authserv_id)'}, as principal "
        f"{config.principal_id!r} (roles: {roles})"
    )


manifest = Manifest(
    name="email",
    config_model=EmailConfig,
    summary=_summary,
    runtime="thalos_bot_email.plugin:plugin",
    env=(PASSWORD_ENV,),
    admission=Admission(_seat, "email", users_key="allowed_senders", group_word="thread"),
    checks="thalos_bot_email.doctor:email_checks",
    pairing=Pairing("Email", "your mail address", "thalos_bot_email.pair"),
    setup=Setup(
        "Use email?",
        order=60,
        keys=(
            ("address", "bot@example.org", "the bot's own mailbox"),
            ("imap_url", "imaps://mail.example.org", "IMAP over TLS"),
            ("smtp_url", "smtps://mail.example.org", "SMTP submission over TLS"),
            ("authserv_id", "mx.example.org", "whose Authentication-Results are trusted"),
        ),
        secrets=(Secret(PASSWORD_ENV, "the bot mailbox's password (or an app password)"),),
        pair_step="finds your mail address, turns email on",
    ),
    connection=lambda config: True,
    install="from a checkout, `pip install ./channels/email` into the same environment "
    "(docs/email.md)",
)
