"""Posting a message exactly once, and the check that makes it so.

``chat.postMessage`` is not idempotent: a post whose answer was lost (a timeout, a
dropped connection, a 5xx) may be in the channel or not. Slack documents message
metadata for this kind of bookkeeping: every post carries ``metadata`` with
``event_type`` ``thalos_part`` and an ``event_payload`` ``id`` unique to that message
(``<nonce>:<part>``), and ``conversations.history`` / ``conversations.replies`` with
``include_all_metadata`` return it. Before a post in doubt is sent again, the channel
looks for that id among the bot's recent messages there; found, the post arrived. The
``client_msg_id`` some clients send is set by Slack's own apps, not taken by
``chat.postMessage``, so it is not used.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog

from thalos_bot_slack.addressing import Place
from thalos_bot_slack.client import SlackApi
from thalos_bot_slack.errors import SlackInDoubtError

log = structlog.get_logger(__name__)

EVENT_TYPE = "thalos_part"
TRIES = 4
"""Posts in doubt tried (each after a check) before the channel gives up for now."""
PROBE_DEPTH = 200


def metadata(part_id: str) -> dict[str, Any]:
    return {"event_type": EVENT_TYPE, "event_payload": {"id": part_id}}


def _id_of(message: dict[str, Any]) -> str | None:
    meta = message.get("metadata")
    if not isinstance(meta, dict) or meta.get("event_type") != EVENT_TYPE:
        return None
    payload = meta.get("event_payload")
    value = payload.get("id") if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None


async def find(api: SlackApi, place: Place, part_id: str, after: str | None) -> str | None:
    """The ts of the bot's message carrying ``part_id`` in ``place``, if it is there."""
    args: dict[str, Any] = {
        "channel": place.channel,
        "include_all_metadata": True,
        "limit": PROBE_DEPTH,
    }
    if after is not None:
        args["oldest"] = after
    if place.thread_ts is not None:
        data = await api.call("conversations.replies", ts=place.thread_ts, **args)
    else:
        data = await api.call("conversations.history", **args)
    for message in data.get("messages") or []:
        if isinstance(message, dict) and _id_of(message) == part_id:
            ts = message.get("ts")
            return ts if isinstance(ts, str) else None
    return None


async def find_stream(api: SlackApi, place: Place, bot_user: str, after: str | None) -> str | None:
    """The ts of a stream the bot started in ``place``'s thread after ``after`` whose
    answer was lost: the bot's newest message there that carries no part id (every post
    of the channel carries one; ``chat.startStream`` takes no metadata) and no file."""
    if place.thread_ts is None or not bot_user:
        return None
    args: dict[str, Any] = {
        "channel": place.channel,
        "ts": place.thread_ts,
        "include_all_metadata": True,
        "limit": PROBE_DEPTH,
    }
    if after is not None:
        args["oldest"] = after
    data = await api.call("conversations.replies", **args)
    found: str | None = None
    for message in data.get("messages") or []:
        if not isinstance(message, dict) or message.get("ts") == place.thread_ts:
            continue
        if message.get("user") != bot_user or message.get("files") or _id_of(message):
            continue
        ts = message.get("ts")
        if isinstance(ts, str) and (after is None or float(ts) > float(after)):
            found = ts
    return found


async def post_once(
    api: SlackApi,
    place: Place,
    part_id: str,
    *,
    after: str | None,
    checked_first: bool = False,
    **content: Any,
) -> str:
    """Post ``content`` (``text``/``markdown_text``/``blocks``) once; the message's ts.

    ``checked_first``: an earlier attempt (maybe by an earlier process) is in doubt, so
    look before posting. Raises :class:`SlackInDoubtError` when even the checks got no answer
    (the caller keeps the delivery pending) and ``SlackCallError`` for a refusal."""
    doubt = checked_first
    delay = 0.5
    for attempt in range(TRIES):
        if doubt:
            try:
                found = await find(api, place, part_id, after)
            except SlackInDoubtError:
                await anyio.sleep(delay)
                delay *= 2
                continue
            if found is not None:
                log.info("slack_post_found_after_doubt", part=part_id, attempt=attempt)
                return found
        try:
            data = await api.call(
                "chat.postMessage",
                channel=place.channel,
                thread_ts=place.thread_ts,
                metadata=metadata(part_id),
                **content,
            )
        except SlackInDoubtError as exc:
            log.warning("slack_post_in_doubt", part=part_id, cause=exc.cause)
            doubt = True
            await anyio.sleep(delay)
            delay *= 2
            continue
        ts = data.get("ts")
        return ts if isinstance(ts, str) else ""
    raise SlackInDoubtError("chat.postMessage", "still no answer after checking")
