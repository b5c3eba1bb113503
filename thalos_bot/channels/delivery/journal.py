"""An outbox row's journal: what the sender notes in it as it goes
(:meth:`Journaling.note`, :meth:`Journaling.settle`), and taking up the delivery where
an earlier process left it (:func:`resume`).

Before each part of a final answer is sent, the sender saves in the row's journal how
many parts are already shown, and for a new message what the transport's probe needs
(Telegram: the *floor*, the highest message id known in the chat's counter) and the
exact fields it sends; for an edit of the live message, that message's id. After a
crash the restarted daemon reads it back: the parts shown are skipped, a live message
is edited again (edits cannot duplicate), and a send that may have arrived is checked
with its own text by the transport's probe before anything is sent again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog

from thalos_bot.channels.delivery.photo import PhotoView
from thalos_bot.channels.delivery.view import Edit, Send, StreamMode, View

log = structlog.get_logger(__name__)


class Journaling:
    """Notes in the journals of one channel's views (its name prefixes the log events)."""

    def __init__(self, channel: str) -> None:
        self._failed = f"{channel}_outbox_note_failed"

    async def note(self, view: View, chat: object, **extra: object) -> None:
        """Before a final part's call: what a restarted daemon needs to check it."""
        journal = view.journal
        if journal is None:
            return
        view.noted_parts = view.parts_done
        try:
            await journal.save({"parts_done": view.parts_done, **extra})
        except Exception:
            log.exception(self._failed, chat=chat)

    async def note_upload(self, view: PhotoView, chat: object, **noted: object) -> None:
        """Before a kept clip's upload: its key and what the transport's probe needs."""
        journal = view.journal
        if journal is None:
            return
        try:
            await journal.save(noted)
        except Exception:
            log.exception(self._failed, chat=chat)

    async def settle(self, views: Iterable[object], chat: object) -> None:
        """Tell each outbox row's journal about parts now shown, and confirm (or refuse)
        the rows whose text is all out."""
        await _settle(views, chat, self._failed)


async def _settle(views: Iterable[object], chat: object, failed: str) -> None:
    for view in list(views):
        if isinstance(view, PhotoView):
            await _settle_upload(view, chat, failed)
            continue
        if not isinstance(view, View):
            continue  # an approval question is not an outbox row
        journal = view.journal
        if journal is None:
            continue
        try:
            if view.done:
                view.journal = None
                await (journal.refuse() if view.refused else journal.confirm())
            elif view.parts_done > view.noted_parts:
                view.noted_parts = view.parts_done
                await journal.save({"parts_done": view.parts_done})
        except Exception:
            log.exception(failed, chat=chat)


async def _settle_upload(view: PhotoView, chat: object, failed: str) -> None:
    journal = view.journal
    if journal is None or not view.done:
        return  # a tool's image (no row), or a clip still to upload
    view.journal = None
    try:
        await (journal.refuse() if view.refused else journal.confirm())
    except Exception:
        log.exception(failed, chat=chat)


def resume(view: View, progress: Mapping[str, object], mode: StreamMode, limit: int) -> None:
    """Bring a closed ``view`` to the state ``progress`` records."""
    done = progress.get("parts_done")
    if isinstance(done, int):
        while view.parts_done < done:
            step = view.next_step(mode, 0.0, limit)
            if not isinstance(step, Send | Edit):
                break
            view.commit(step.part)
    view.noted_parts = view.parts_done
    live_id = progress.get("live_id")
    if isinstance(live_id, int | str):
        view.live_id = str(live_id)
        view.live_text = None  # unknown: the next round edits it to the part
    key = progress.get("key")
    if isinstance(key, str):
        view.key = key  # the part in doubt is sent again as the same request
    if "key" in progress or "fields" in progress:
        view.doubt = dict(progress)  # the transport's probe reads what it noted


def floor_of(progress: Mapping[str, object]) -> int | None:
    floor = progress.get("floor")
    return floor if isinstance(floor, int) else None
