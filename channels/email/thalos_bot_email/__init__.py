"""The email channel for thalos-bot: a conversation per mail thread, read over IMAP
with IDLE and answered through SMTP submission (see docs/email.md)."""

PASSWORD_ENV = "THALOS_EMAIL_PASSWORD"  # noqa: S105 - a variable's name
"""The mailbox password (IMAP and SMTP), from the environment only."""
