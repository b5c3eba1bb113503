"""``thalos-bot doctor``'s checks of the email channel: both logins, the folders, IDLE."""

from __future__ import annotations

import os

import aiosmtplib

from thalos_bot.channels.checks import Check, skipped
from thalos_bot_email import PASSWORD_ENV
from thalos_bot_email.config import EmailConfig, endpoint
from thalos_bot_email.mailbox import Mailbox, MailboxError

IMAP = "Email IMAP login"
SMTP = "Email SMTP login"
NO_FOLDER = (
    "the server has no such folder",
    "create it in your mail client, or name another in the config",
)


async def _imap(config: EmailConfig, password: str) -> list[Check]:
    where = endpoint(config.imap_url)
    try:
        mailbox = await Mailbox.login(config, password)
    except MailboxError as exc:
        fix = (
            f"check username/address and {PASSWORD_ENV}"
            if exc.refused
            else "check imap_url, the network and the server's TLS certificate"
        )
        return [Check(IMAP, "fail", str(exc), fix)]
    checks = [Check(IMAP, "ok", f"{config.login} at {where}")]
    try:
        for folder in (config.folder, config.sent_folder):
            try:
                await mailbox.select(folder)
                checks.append(Check(f"Email folder {folder}", "ok"))
            except MailboxError:
                checks.append(Check(f"Email folder {folder}", "fail", *NO_FOLDER))
        if not mailbox.idles:
            every = f"not offered: new mail is looked for every {config.poll_interval:g}s"
            checks.append(Check("Email IMAP IDLE", "warn", every))
    finally:
        await mailbox.close()
    return checks


async def _smtp(config: EmailConfig, password: str) -> Check:
    where = endpoint(config.smtp_url)
    try:  # the client is closed on every way out, a refused login's included
        async with aiosmtplib.SMTP(**config.smtp_options()) as client:
            await client.login(config.login, password)
    except aiosmtplib.SMTPAuthenticationError as exc:
        return Check(
            SMTP, "fail", f"{where} refused the login ({exc.code})", f"check {PASSWORD_ENV}"
        )
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        return Check(SMTP, "fail", f"cannot use {where}: {type(exc).__name__}", "check smtp_url")
    return Check(SMTP, "ok", f"{config.login} at {where}")


async def email_checks(config: EmailConfig, *, offline: bool) -> list[Check]:
    if (skip := skipped("Email IMAP and SMTP logins", PASSWORD_ENV, offline=offline)) is not None:
        return [skip]
    password = os.environ[PASSWORD_ENV]
    return [*await _imap(config, password), await _smtp(config, password)]
