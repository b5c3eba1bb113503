"""Conversations are mail threads, and answers are replies in them (docs/email.md). A
conversation id is the correspondent and the thread's root, the first Message-ID its
references name: ``ann@example.org <root@host>`` (the address says whose it is: the
kit's allowlist reads it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import EmailMessage, Message
from email.utils import formatdate

from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot.channels.markdown.html import HtmlDialect, escape
from thalos_bot.channels.markdown.render import Renderer
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ConversationId

MESSAGE_ID = re.compile(r"<[^<>\s]+>")
DIALECT = HtmlDialect(
    safe_url=re.compile(r"^(?:https?://|mailto:)[^\s\"<>]+$", re.IGNORECASE),
    code_in_emphasis=True,
)
_RENDERER = Renderer(DIALECT)
STYLE = "white-space: pre-wrap; font-family: sans-serif"


@dataclass(frozen=True, slots=True)
class Thread:
    """The chat an answer goes to: the correspondent, and the thread's root Message-ID
    (with its angle brackets)."""

    peer: str
    root: str

    @property
    def conversation(self) -> ConversationId:
        return ConversationId(f"{self.peer} {self.root}")

    @classmethod
    def parse(cls, conversation_id: str) -> Thread:
        peer, _, root = conversation_id.partition(" ")
        if "@" not in peer or not MESSAGE_ID.fullmatch(root):
            raise ValueError(f"not an email conversation: {conversation_id!r}")
        return cls(peer, root)


@dataclass(frozen=True, slots=True)
class Latest:
    """What a reply to a thread's latest mail needs of that mail."""

    message_id: str
    subject: str
    references: tuple[str, ...]


def _ids(mail: Message, header: str) -> list[str]:
    return MESSAGE_ID.findall(str(mail.get(header, "")))


def root_of(mail: Message) -> tuple[str, Latest] | None:
    """The thread's root and the mail as the latest of its thread (None: no
    Message-ID, nothing to answer)."""
    found = _ids(mail, "Message-ID")
    if not found:
        return None
    references = _ids(mail, "References") or _ids(mail, "In-Reply-To")
    root = references[0] if references else found[0]
    return root, Latest(found[0], str(mail.get("Subject", "")), tuple(references))


def message_id(key: str, address: str) -> str:
    """The Message-ID of the message sent with the engine's ``key`` (the same for every
    try, so a send in doubt can be looked for)."""
    return f"<thalos.{key}@{address.rsplit('@', 1)[1]}>"


def html(source: str, *, plain: bool) -> str:
    inner = escape(source) if plain else (_RENDERER.render(source) or escape(source))
    return f'<html><body><div style="{STYLE}">{inner}</div></body></html>\n'


def letter(
    sender: str,
    to: str,
    latest: Latest | None,
    message: Outgoing[None],
    image: ToolImage | VoiceClip | None = None,
) -> EmailMessage:
    """An answer to the thread whose latest mail is ``latest`` (None: unknown; the
    subject then says so, and no references are set), with a tool's image or the answer
    read aloud attached."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = to
    if latest is None:
        mail["Subject"] = "Re: (thread)"
    else:
        subject = latest.subject.strip() or "(no subject)"
        mail["Subject"] = subject if re.match(r"(?i)re:", subject) else f"Re: {subject}"
        mail["In-Reply-To"] = latest.message_id
        mail["References"] = " ".join(dict.fromkeys([*latest.references, latest.message_id]))
    mail["Message-ID"] = message_id(message.key, sender)
    mail["Date"] = formatdate(localtime=False)
    mail["Auto-Submitted"] = "auto-replied"
    mail["X-Auto-Response-Suppress"] = "All"
    mail.set_content(message.text)  # set_content ends the text with a newline
    mail.add_alternative(html(message.text, plain=message.plain), subtype="html")
    if image is not None:  # add_attachment puts the alternative in a multipart/mixed
        maintype, _, subtype = image.media_type.partition("/")
        mail.add_attachment(
            image.data, maintype=maintype, subtype=subtype or "octet-stream", filename=image.name
        )
    return mail
