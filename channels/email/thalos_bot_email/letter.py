"""Which mails are answered, and what of them reaches the model.

A From address proves nothing: anyone can write any. A mail is answered only when the
receiving server (the configured ``authserv_id``) wrote in its ``Authentication-Results``
that DKIM or SPF passed for a domain aligned with the From domain, and the From address
is allowed. Only the topmost run of that server's results counts: the server writes its
own above everything the sender wrote (and should strip forged ones naming it; RFC 8601,
section 5). Mail from robots is never answered, so the bot never talks to another robot
or to itself: ``Auto-Submitted`` other than ``no``, ``Precedence: bulk/list/junk``,
mailing-list headers, bounces, and the bot's own address.
"""

from __future__ import annotations

import email.policy
import re
from dataclasses import dataclass
from email import message_from_bytes
from email.message import EmailMessage
from email.utils import getaddresses
from html.parser import HTMLParser

from thalos_bot.channels.intake.files import FileKind

AR = "authentication-results"
HEADER_MAX_BYTES = 256 * 1024
HEADER_MAX_FIELDS = 1000
"""A header larger than either is no person's mail: it is not parsed."""
ROBOT_PRECEDENCE = {"bulk", "list", "junk"}
BOUNCERS = {"mailer-daemon", "postmaster"}
_COMMENT = re.compile(r"\([^()]*\)")
_QUOTE_INTRO = re.compile(r"^\s*(On|Le|Am) .+(wrote|écrit|schrieb)\s*:\s*$")


@dataclass(frozen=True, slots=True)
class Part:
    """An attachment, held until the intake asks for it."""

    kind: FileKind
    name: str
    mime: str
    data: bytes


def parse(raw: bytes) -> EmailMessage | None:
    """The mail, when its header is within bounds (None: it is not, or there is none)."""
    end = raw.find(b"\r\n\r\n")
    head = raw[: end if end >= 0 else len(raw)]
    if len(head) > HEADER_MAX_BYTES:
        return None
    mail = message_from_bytes(raw, policy=email.policy.default)
    if len(mail) > HEADER_MAX_FIELDS:
        return None
    assert isinstance(mail, EmailMessage)
    return mail


def sender(mail: EmailMessage) -> str | None:
    """The one From address, lower-cased (None: none, or several)."""
    found = getaddresses([str(v) for v in mail.get_all("From", [])])
    addresses = [address.lower() for _, address in found if "@" in address]
    return addresses[0] if len(addresses) == 1 else None


def robot(mail: EmailMessage, own: str) -> str | None:
    """Why the mail is from a robot (or the bot itself), or None."""
    auto = str(mail.get("Auto-Submitted", "no")).split(";")[0].strip().lower()
    if auto != "no":
        return "auto-submitted"
    if str(mail.get("Precedence", "")).strip().lower() in ROBOT_PRECEDENCE:
        return "precedence"
    if any(key.lower().startswith("list-") for key in mail):
        return "mailing list"
    return_path = mail.get("Return-Path")
    if return_path is not None and str(return_path).strip() in {"<>", ""}:
        return "bounce"
    address = sender(mail)
    if address is None:
        return "no single From address"
    if address.split("@")[0] in BOUNCERS:
        return "bounce"
    if address == own:
        return "own address"
    return None


def _aligned(domain: str, author: str) -> bool:
    domain = domain.lower().strip(".")
    return bool(domain) and (author == domain or author.endswith("." + domain))


def authenticated(mail: EmailMessage, authserv_id: str) -> bool:
    """Whether the trusted server's topmost results show DKIM or SPF passing for a
    domain aligned with the From domain."""
    address = sender(mail)
    if address is None:
        return False
    author = address.rsplit("@", 1)[1]
    results: list[str] = []
    for key, value in mail.items():
        if key.lower() != AR:
            if results:
                break  # the run of the trusted server's results ended
            continue
        text = _COMMENT.sub("", str(value))
        serv, _, rest = text.partition(";")
        if (serv.split() or [""])[0].lower() != authserv_id:
            if results:
                break
            continue
        results.extend(rest.split(";"))
    for result in results:
        words = result.split()
        if not words or "=" not in words[0]:
            continue
        method, outcome = (w.lower() for w in words[0].split("=", 1))
        props = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        props = {k.lower(): v.strip('"') for k, v in props.items()}
        if outcome != "pass":
            continue
        if method == "dkim":
            signer = props.get("header.d") or props.get("header.i", "").rsplit("@", 1)[-1]
            if _aligned(signer, author):
                return True
        if method == "spf":
            envelope = props.get("smtp.mailfrom", "").rsplit("@", 1)[-1]
            if _aligned(envelope, author):
                return True
    return False


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.out: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in {"script", "style"}:
            self._skip += 1
        elif tag in {"br", "p", "div", "li", "tr"}:
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in {"script", "style"}:
            self._skip = max(0, self._skip - 1)

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.out.append(data)


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "".join(parser.out)


def without_quote(text: str) -> str:
    """The new words of a reply: the quoted mail (``>`` lines, and the line that
    introduces them) is the thread's history, which the session already holds."""
    lines = text.replace("\r\n", "\n").split("\n")
    kept: list[str] = []
    for line in lines:
        if line.startswith(">"):
            if kept and _QUOTE_INTRO.match(kept[-1]):
                kept.pop()
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def body(mail: EmailMessage) -> tuple[str, list[Part]]:
    """The mail's own text (no quote) and its attachments."""
    text: str | None = None
    html: str | None = None
    parts: list[Part] = []
    for part in mail.walk():
        if part.is_multipart():
            continue
        mime = part.get_content_type()
        disposition = part.get_content_disposition()
        name = part.get_filename() or ""
        if disposition != "attachment" and not name and mime in {"text/plain", "text/html"}:
            content = _decoded(part)
            if mime == "text/plain" and text is None:
                text = content
            elif mime == "text/html" and html is None:
                html = content
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        kind: FileKind = "photo" if mime.startswith("image/") else "document"
        if mime.startswith("audio/"):
            kind = "audio"
        parts.append(Part(kind, name or f"attachment{len(parts) + 1}", mime, data))
    if text is None:
        text = html_text(html) if html is not None else ""
    return without_quote(text), parts


def _decoded(part: EmailMessage) -> str:
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return data.decode(charset, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")
