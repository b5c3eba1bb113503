"""Conversations are mail threads.

A new mail starts a conversation; a reply (``References`` / ``In-Reply-To``) continues
the conversation of its thread's root, the first Message-ID its references name. The
conversation id is the correspondent and the root, ``ann@example.org <root@host>``: the
thread is the conversation, and the address is whose it is (the kit's allowlist reads
it). An answer is a reply to the latest mail of the thread the bot has read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message

from thalos_bot.domain.ids import ConversationId

MESSAGE_ID = re.compile(r"<[^<>\s]+>")


@dataclass(frozen=True, slots=True)
class Thread:
    """The chat an answer goes to: the correspondent, and the thread's root."""

    peer: str
    root: str
    """The root's Message-ID, with its angle brackets."""

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

    def reply_headers(self) -> dict[str, str]:
        subject = self.subject.strip() or "(no subject)"
        if not re.match(r"(?i)re:", subject):
            subject = f"Re: {subject}"
        chain = [*self.references, self.message_id]
        return {
            "Subject": subject,
            "In-Reply-To": self.message_id,
            "References": " ".join(dict.fromkeys(chain)),
        }


def ids(value: str | None) -> list[str]:
    return MESSAGE_ID.findall(value or "")


def root_of(mail: Message) -> tuple[str, Latest] | None:
    """The thread's root and the mail as the latest of its thread (None: no
    Message-ID, nothing to answer)."""
    found = ids(str(mail.get("Message-ID", "")))
    if not found:
        return None
    own = found[0]
    references = ids(str(mail.get("References", ""))) or ids(str(mail.get("In-Reply-To", "")))
    root = references[0] if references else own
    return root, Latest(own, str(mail.get("Subject", "")), tuple(references))
