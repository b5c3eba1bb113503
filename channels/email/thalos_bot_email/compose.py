"""The bot's mails: one per answer, ``multipart/alternative`` with the plain text and
the HTML rendered from the same Markdown (code blocks kept), marked as automatic
replies, with the Message-ID fixed before the send (the engine's key)."""

from __future__ import annotations

import re
from email.message import EmailMessage
from email.utils import formataddr, formatdate

from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot.channels.markdown.html import HtmlDialect, escape
from thalos_bot.channels.markdown.render import Renderer
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot_email.threads import Latest

Image = ToolImage | VoiceClip | None

DIALECT = HtmlDialect(
    safe_url=re.compile(r"^(?:https?://|mailto:)[^\s\"<>]+$", re.IGNORECASE),
    code_in_emphasis=True,
)
_RENDERER = Renderer(DIALECT)
STYLE = "white-space: pre-wrap; font-family: sans-serif"


def message_id(key: str, address: str) -> str:
    """The Message-ID a message sent with the engine's ``key`` has (the same for every
    try, so a send in doubt can be looked for)."""
    return f"<thalos.{key}@{address.rsplit('@', 1)[1]}>"


def html(source: str, *, plain: bool) -> str:
    inner = escape(source) if plain else (_RENDERER.render(source) or escape(source))
    return f'<html><body><div style="{STYLE}">{inner}</div></body></html>\n'


def letter(
    sender: str, to: str, latest: Latest | None, message: Outgoing[None], image: Image = None
) -> EmailMessage:
    """An answer to the thread whose latest mail is ``latest`` (None: unknown; the
    subject then says so, and no references are set), with a tool's image or the answer
    read aloud attached."""
    mail = EmailMessage()
    mail["From"] = formataddr(("", sender))
    mail["To"] = to
    headers = latest.reply_headers() if latest is not None else {"Subject": "Re: (thread)"}
    for name, value in headers.items():
        mail[name] = value
    mail["Message-ID"] = message_id(message.key, sender)
    mail["Date"] = formatdate(localtime=False)
    mail["Auto-Submitted"] = "auto-replied"
    mail["X-Auto-Response-Suppress"] = "All"
    text = message.text
    mail.set_content(text if text.endswith("\n") else text + "\n")
    mail.add_alternative(html(text, plain=message.plain), subtype="html")
    if image is not None:
        maintype, _, subtype = image.media_type.partition("/")
        mail.make_mixed()
        mail.add_attachment(
            image.data, maintype=maintype, subtype=subtype or "octet-stream", filename=image.name
        )
    return mail
