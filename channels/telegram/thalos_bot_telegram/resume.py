"""Taking up an outbox row's delivery where an earlier process left it.

Before each part of a final answer is sent, the sender saves in the row's journal how
many parts are already shown, and for a sendMessage the *floor* (the highest message
id known in the chat) and the exact fields it sends; for an edit of the live message,
that message's id. After a crash the restarted daemon reads it back: the parts shown
are skipped, a live message is edited again (edits cannot duplicate), and a send that
may have arrived is checked from its floor with its own text (see
:mod:`thalos_bot_telegram.uncertain`) before anything is sent again.
"""

from __future__ import annotations

from collections.abc import Mapping

from thalos_bot_telegram.config import StreamMode
from thalos_bot_telegram.render import Edit, Send, View


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
    if isinstance(live_id, int):
        view.live_id = live_id
        view.live_text = None  # unknown: the next round edits it to the part
    floor, fields = progress.get("floor"), progress.get("fields")
    if isinstance(floor, int) and isinstance(fields, dict):
        sent = {str(k): str(v) for k, v in fields.items() if k in {"text", "parse_mode"}}
        if "text" in sent:
            view.doubt = (floor, sent)


def floor_of(progress: Mapping[str, object]) -> int | None:
    floor = progress.get("floor")
    return floor if isinstance(floor, int) else None
