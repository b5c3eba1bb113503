"""What a person sent along with (or instead of) words, as it crosses into the runtime.

A channel downloads and checks media before it hands a message over (limits, media
types, scaling): by then an :class:`Attachment` is ready to go to the model as it is.
A :class:`Reattach` asks for something sent earlier (the photo a reply points at), by
the key the channel gave it then; the runtime adds it only when it is still stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AttachmentKind = Literal["image", "pdf", "text"]


@dataclass(frozen=True, slots=True)
class Attachment:
    kind: AttachmentKind
    media_type: str
    data: bytes
    name: str = ""
    """The file name the person gave it, when there is one (heads a text file)."""
    origin: str = ""
    """An opaque key of the channel's (e.g. ``telegram:<file_unique_id>``) under which
    a later reply can ask for it again; empty when there is none."""


@dataclass(frozen=True, slots=True)
class Reattach:
    origin: str
    """The key an earlier :class:`Attachment` was stored under."""


Inbound = Attachment | Reattach
