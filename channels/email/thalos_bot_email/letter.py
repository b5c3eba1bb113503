"""Which mails are answered, and what of them reaches the model.

A From address proves nothing: a mail is answered only when the trusted receiving server
(``authserv_id``) vouched for its sender (:func:`authenticated`), the sender is allowed,
and it is no robot's (:func:`robot`). A mail the standard library's ``email`` package
cannot read is refused (:class:`Refused`) like any other: never an exception.
"""

from __future__ import annotations

import email.policy
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email import message_from_bytes
from email.errors import MessageError
from email.message import EmailMessage, MIMEPart
from html.parser import HTMLParser

from thalos_bot_email.threads import Latest, root_of

HEADER_MAX_BYTES = 256 * 1024
HEADER_MAX_FIELDS = 1000
"""A header larger than either is no person's mail: it is not parsed."""
ROBOT_PRECEDENCE = {"bulk", "list", "junk"}
BOUNCERS = {"mailer-daemon", "postmaster"}
UNREADABLE = (MessageError, ValueError, LookupError, TypeError, AttributeError)
"""What the ``email`` package raises on a header or part it cannot read."""
_COMMENT = re.compile(r"\([^()]*\)")
_QUOTE_INTRO = re.compile(r"^\s*(On|Le|Am) .+(wrote|écrit|schrieb)\s*:\s*$")
_HEAD_END = re.compile(rb"\r?\n\r?\n")


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    mime: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Admitted:
    """A mail to answer: who wrote it, its thread, and what it says."""

    address: str
    message_id: str
    root: str
    """The thread's root Message-ID."""
    latest: Latest
    text: str
    """Its own words (a slash command: the first line alone)."""
    files: list[Part]
    date: datetime


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a mail is not answered: the log event saying so (the sender is never told)."""

    event: str
    reason: str = ""
    message_id: str | None = None
    """Its Message-ID, when it has one (it is done: a reading again skips it)."""


def parse(raw: bytes) -> EmailMessage | None:
    """The mail, when its header is within bounds (None: it is not, or there is none)."""
    end = _HEAD_END.search(raw)
    if (end.start() if end else len(raw)) > HEADER_MAX_BYTES:
        return None
    mail = message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(mail, EmailMessage)
    return mail if len(mail) <= HEADER_MAX_FIELDS else None


def sender(mail: EmailMessage) -> str | None:
    """The one From address, lower-cased (None: none, or several)."""
    found = [
        address.addr_spec.lower()
        for header in mail.get_all("From", [])
        for address in getattr(header, "addresses", ())
    ]
    return found[0] if len(found) == 1 and "@" in found[0] else None


def robot(mail: EmailMessage, own: str) -> str | None:
    """Why the mail is from a robot (or the bot itself), or None: so the bot never talks
    to another robot or to itself."""
    if str(mail.get("Auto-Submitted", "no")).split(";")[0].strip().lower() != "no":
        return "auto-submitted"
    if str(mail.get("Precedence", "")).strip().lower() in ROBOT_PRECEDENCE:
        return "precedence"
    if any(key.lower().startswith("list-") for key in mail):
        return "mailing list"
    if str(mail.get("Return-Path", "x")).strip() in {"<>", ""}:
        return "bounce"
    address = sender(mail)
    if address is None:
        return "no single From address"
    if address.split("@")[0] in BOUNCERS:
        return "bounce"
    return "own address" if address == own else None


def read(
    raw: bytes, own: str, authserv_id: str, allowed: list[str] | None, *, whole: bool = True
) -> Admitted | Refused:
    """What the bot takes of the mail ``raw``, or why it takes nothing: it is answered
    when it is not a robot's, from an ``allowed`` address (None: any), authenticated by
    ``authserv_id``. ``whole=False``: only its header was read (its text and files are
    not)."""
    mail = parse(raw)
    if mail is None:
        return Refused("email_mail_unreadable", "a header past its bounds, or none")
    mid = None
    try:
        found = root_of(mail)
        if found is None:
            return Refused("email_ignored_robot", "no Message-ID")
        root, latest = found
        mid = latest.message_id
        why, address = robot(mail, own), sender(mail)
        if why is not None or address is None:
            return Refused("email_ignored_robot", why or "", mid)
        if allowed is not None and address not in allowed:
            return Refused("email_from_stranger", message_id=mid)
        if not authenticated(mail, authserv_id):
            return Refused("email_not_authenticated", authserv_id, mid)
        text, files = body(mail) if whole else ("", [])
        when = getattr(mail["Date"], "datetime", None) or datetime.now(UTC)
    except UNREADABLE as exc:
        return Refused("email_mail_unreadable", type(exc).__name__, mid)
    date = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return Admitted(address, mid, root, latest, _command_or_text(text), files, date)


def _command_or_text(text: str) -> str:
    """A slash command is the first line; the rest (a signature) is not its argument."""
    if text.startswith("/"):
        return text.split("\n", 1)[0].strip()
    return text.partition("\n-- \n")[0].strip()


def _results(mail: EmailMessage, authserv_id: str) -> list[str]:
    """The results of the topmost run of ``authserv_id``'s headers, comments removed
    (read raw: another header the ``email`` package cannot parse does not hide them)."""
    results: list[str] = []
    for key, value in mail.raw_items():
        serv, _, rest = _COMMENT.sub("", value).partition(";")
        if key.lower() == "authentication-results" and serv.lower().split()[:1] == [authserv_id]:
            results.extend(rest.split(";"))
        elif results:
            break  # the run of the trusted server's results ended
    return results


def authenticated(mail: EmailMessage, authserv_id: str) -> bool:
    """Whether the trusted server's topmost results show DKIM or SPF passing for a
    domain aligned with the From domain. Only its topmost run counts: the server writes
    its own above everything the sender wrote (and should strip forged ones naming it;
    RFC 8601, section 5)."""
    address = sender(mail)
    if address is None:
        return False
    author = address.rsplit("@", 1)[1]
    for result in _results(mail, authserv_id):
        words = result.split()
        method, _, outcome = (words[0].lower() if words else "").partition("=")
        props = {k.lower(): v.strip('"') for k, _, v in (w.partition("=") for w in words[1:])}
        if outcome != "pass" or method not in {"dkim", "spf"}:
            continue
        if method == "dkim":
            domain = props.get("header.d") or props.get("header.i", "").rsplit("@", 1)[-1]
        else:
            domain = props.get("smtp.mailfrom", "").rsplit("@", 1)[-1]
        domain = domain.lower().strip(".")  # aligned: the From domain, or a parent of it
        if domain and (author == domain or author.endswith("." + domain)):
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
    kept: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line.startswith(">"):
            kept.append(line)
        elif kept and _QUOTE_INTRO.match(kept[-1]):
            kept.pop()
    return "\n".join(kept).strip()


def body(mail: EmailMessage) -> tuple[str, list[Part]]:
    """The mail's own text (no quote; its HTML's text when it has no plain text) and
    its attachments. An unreadable part is left out."""
    main = mail.get_body(("plain", "html"))
    text = _content(main) if main is not None else ""
    if main is not None and main.get_content_subtype() == "html":
        text = html_text(text)
    files: list[Part] = []
    for part in mail.iter_attachments():
        data = None if part.is_multipart() else part.get_payload(decode=True)
        if isinstance(data, bytes):
            name = part.get_filename() or f"attachment{len(files) + 1}"
            files.append(Part(name, part.get_content_type(), data))
    return without_quote(text), files


def _content(part: MIMEPart) -> str:
    """A text part's words, in its charset (UTF-8 when that is unknown)."""
    try:
        return str(part.get_content())
    except LookupError:
        data = part.get_payload(decode=True)
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else ""
