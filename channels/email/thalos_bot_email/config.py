"""``[channels.email]``: the mailbox, who may write to the bot, and whose word on their
authentication counts (each key is described in docs/email.md). TLS is the only way to
a remote server; plaintext is for a server on this machine, named so (``+plain``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, StringConstraints, ValidationInfo, field_validator

from thalos_bot.channels.settings import ChannelSettings, each_matching, listed_when_enabled
from thalos_bot.config.types import duration

ADDRESS = re.compile(r"^[^@\s<>\"/]+@[^@\s<>\"/]+\.[^@\s<>\"/.]+$")
SERVER = re.compile(r"^[a-z0-9._-]+$")
Lower = Annotated[str, StringConstraints(to_lower=True)]
"""Addresses and server names are compared lower-cased."""
LOOPBACK = "127.0.0.1"
Security = Literal["tls", "starttls", "plain"]
SCHEMES: dict[str, tuple[str, Security, int]] = {
    "imaps": ("imap", "tls", 993),
    "imap+plain": ("imap", "plain", 143),
    "smtps": ("smtp", "tls", 465),
    "smtp": ("smtp", "starttls", 587),
    "smtp+plain": ("smtp", "plain", 25),
}


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int
    security: Security

    def __str__(self) -> str:
        return f"{self.host}:{self.port} ({self.security})"


def endpoint(url: str) -> Endpoint:
    """The server a validated ``imap_url`` or ``smtp_url`` names."""
    parts = urlsplit(url)
    _, security, port = SCHEMES[parts.scheme]
    return Endpoint(parts.hostname or "", parts.port or port, security)


def _not_address(item: str) -> str:
    return f"{item!r} is not a mail address (such as ann@example.org)"


class EmailConfig(ChannelSettings):
    users_key: ClassVar[str] = "allowed_senders"
    imap_url: str = "imaps://localhost"
    smtp_url: str = "smtps://localhost"
    address: Lower = Field("", validate_default=True)
    """The bot's own address (its answers' From; mail from it is never answered)."""
    username: str | None = None
    """The login for IMAP and SMTP when it is not ``address``."""
    allowed_senders: list[Lower] = Field(default_factory=list, validate_default=True)
    authserv_id: Lower = Field("", validate_default=True)
    """The receiving server whose ``Authentication-Results`` are trusted (the first word
    of that header): without a pass from it for the From domain, no mail is answered."""
    folder: str = "INBOX"
    sent_folder: str = "Sent"
    """Where a copy of each answer is kept, and looked for when a send is in doubt."""
    attachment_max_bytes: int = Field(20 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    mail_max_bytes: int = Field(40 * 1024 * 1024, ge=64 * 1024, le=200 * 1024 * 1024)
    """Of a larger mail only the header is read (and the sender told)."""
    timeout: Annotated[float, duration(high=600)] = 30.0
    """One IMAP or SMTP command's; past it the connection is deemed lost."""
    idle_renew: Annotated[float, duration(1, 1740)] = 300.0
    """How often IDLE is ended and begun again: the server's answer (within 10 s) shows
    the connection alive, so a silently dead one is found within this and 10 s. At most
    29 minutes: servers end an IDLE after 30 (RFC 2177)."""
    poll_interval: Annotated[float, duration(1.0, 1740)] = 60.0
    """How often a server without IDLE is asked for new mail (one with IDLE never is)."""

    _address = listed_when_enabled(
        "address", "give the bot's own mail address, e.g. address = 'bot@example.org'"
    )
    _senders = listed_when_enabled(
        "allowed_senders",
        "list the addresses allowed to write to the bot, e.g. allowed_senders = "
        "['ann@example.org']; an empty list never means everyone",
    )
    _address_form = each_matching("address", ADDRESS, _not_address)
    _senders_form = each_matching("allowed_senders", ADDRESS, _not_address)
    _authserv_form = each_matching(
        "authserv_id", SERVER, lambda item: f"{item!r} is not a server name (e.g. mx.example.org)"
    )
    _authserv_set = listed_when_enabled(
        "authserv_id",
        "name the receiving server whose Authentication-Results are trusted, e.g. "
        "authserv_id = 'mx.example.org' (the first word of that header in a mail it "
        "delivered); without it no mail can be shown to be authentic",
    )

    @field_validator("imap_url", "smtp_url")
    @classmethod
    def _url(cls, url: str, info: ValidationInfo) -> str:
        protocol = str(info.field_name).removesuffix("_url")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"{url!r} is not a URL ({exc})") from None
        known = SCHEMES.get(parts.scheme)
        if known is None or known[0] != protocol:
            names = ", ".join(f"{s}://" for s, (p, _, _) in SCHEMES.items() if p == protocol)
            hint = " (IMAP without TLS is not offered: use imaps://, port 993)" * (
                parts.scheme == "imap"
            )
            raise ValueError(f"{url!r}: the scheme must be one of {names}{hint}")
        if not parts.hostname or parts.path not in {"", "/"} or parts.username or port == 0:
            raise ValueError(
                f"{url!r}: give a host and maybe a port only, e.g. {protocol}s://mail.example.org"
            )
        if known[1] == "plain" and parts.hostname != LOOPBACK:
            raise ValueError(
                f"{url!r}: plaintext is allowed only to {LOOPBACK} (a server on this machine); "
                f"use TLS ({protocol}s://) for {parts.hostname}"
            )
        return url

    def smtp_options(self) -> dict[str, Any]:
        """aiosmtplib's options for reaching ``smtp_url``."""
        where = endpoint(self.smtp_url)
        return {
            "hostname": where.host,
            "port": where.port,
            "use_tls": where.security == "tls",
            "start_tls": where.security == "starttls",
            "timeout": self.timeout,
        }

    @property
    def login(self) -> str:
        return self.username or self.address
