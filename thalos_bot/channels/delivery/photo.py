"""An image a tool made (or the answer read aloud, :class:`VoiceClip`), as one photo
(one voice message) for the chat to show after the answer.

A :class:`PhotoView` sits in the chat's outbox like an answer or a notice, so it is
paced, waits out flood control and keeps its place in order (after the answer of the
turn that made it). Its one step is :class:`SendPhoto`. A sendPhoto in doubt is checked
like a new message by the transport's probe (Telegram's: ``editMessageCaption`` with
the identical caption), so the photo is shown exactly once.

A spoken answer's clip kept in the outbox carries its row's journal: the upload is
noted in it before the call (its key, and what the transport's probe needs), and the
row is confirmed when the upload returns, or refused when it is refused for good. A
journal with a key is an upload an earlier process may have made (:func:`resume_upload`):
looked for, or made again as the same request, before anything else.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from thalos_bot.channels import notices
from thalos_bot.channels.delivery.view import StreamMode
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.domain.events import ToolImage, VoiceClip

MAX_CAPTION = 1024
"""Telegram's caption limit, in characters."""


@dataclass(frozen=True, slots=True)
class SendPhoto:
    caption: str


@dataclass(slots=True)
class PhotoView:
    image: ToolImage | VoiceClip = field(repr=False)
    thread: str | None = None
    caption_limit: int = 1024
    """The transport's caption limit, in characters."""
    sent: bool = False
    """True once the photo is in the chat (or was refused for good)."""
    key: str = field(default_factory=lambda: secrets.token_hex(8))
    """The upload's idempotency key (see :attr:`View.key`)."""
    kind: Literal["photo"] = "photo"
    closed: bool = True
    journal: DeliveryJournal | None = None
    """The outbox row of a kept clip (None: a tool's image, a clip not kept)."""
    refused: bool = False
    """The platform refused it for good."""
    doubt: dict[str, object] | None = None
    """What an earlier process noted before an upload it may have made (to check)."""

    @property
    def caption(self) -> str:
        image = self.image
        if isinstance(image, VoiceClip):
            return notices.voice_clip(image.part, image.parts)[: self.caption_limit]
        return notices.tool_image(image.tool, image.media_type, len(image.data))[
            : self.caption_limit
        ]

    def next_step(self, mode: StreamMode, now: float = 0.0, limit: int = 0) -> SendPhoto | None:
        return None if self.sent else SendPhoto(self.caption)

    def wake_at(self, mode: StreamMode) -> float | None:
        return None

    @property
    def done(self) -> bool:
        return self.sent


def resume_upload(view: PhotoView, progress: Mapping[str, object]) -> None:
    """A kept clip's journal, as an earlier process left it: an upload was begun with
    this key (and what the transport's probe needs), so it may have arrived."""
    key = progress.get("key")
    if isinstance(key, str):
        view.key = key  # made again, it is the same request
    if "key" in progress or "fields" in progress:
        view.doubt = dict(progress)
