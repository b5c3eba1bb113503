"""Slack's wire for the kit's delivery engine: its verbs over the Web API, what their
failures mean, and its limits.

``chat.postMessage`` is not idempotent: a post whose answer was lost (a timeout, a
dropped connection, a 5xx) may be in the channel or not. Slack documents message
metadata for this kind of bookkeeping, so every post carries the engine's key in its
``metadata``, and :meth:`SlackWire.find` looks for it among the bot's recent messages
there before a post in doubt is made again. The same history is where the kit's
catch-up reads what was said while no socket was connected (:meth:`SlackWire.missed`).

In a thread, with ``streaming = "auto"``, an answer's live preview is Slack's own
stream: the kit's :class:`~thalos_bot.channels.delivery.wire.Appending`. The first
refusal of ``chat.startStream`` turns it off for the process. A start takes no
metadata (:meth:`SlackWire._find_stream` looks for one in doubt); a stream is stopped
with its key.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.channels.intake.catch_up import paced
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot.channels.pacing.waits import header_wait
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.client import UNANSWERED, UNAUTHORIZED, error_code
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.dialect import escape, to_mrkdwn

log = structlog.get_logger(__name__)

Blocks = list[dict[str, Any]]
"""A question's Block Kit blocks (its buttons)."""

TEXT_PART = 3_900
"""UTF-16 code units of Markdown per message: Slack takes 40,000 characters of ``text``
but advises 4,000, past which some clients cut a message off (its mrkdwn may be a little
longer: ``&amp;``, ``<url|label>``)."""
EVENT_TYPE = "thalos_part"
PROBE_DEPTH = 200
LOOKBACK = 600.0
"""How far before a send (by this process) its check looks, in seconds."""
POSTS_PER_SECOND = 1.0
"""``chat.postMessage``: about one message per second per channel."""
TIER3_PER_MINUTE = 50.0
"""The workspace's Tier 3 (``chat.update``, ``conversations.history``): every call of
the channel keeps within it."""
CATCH_UP_MOST = 100
"""At most this many missed messages per conversation are read back."""
DEFAULT_WAIT = 30.0
"""A 429 without a readable Retry-After."""
KINDS: dict[str, Failure] = {
    "invalid_blocks": Failure.BAD_ENTITIES,
    "msg_too_long": Failure.BAD_ENTITIES,
    "message_not_found": Failure.GONE,
    "cant_update_message": Failure.NOT_EDITABLE,
    "message_not_in_streaming_state": Failure.NOT_EDITABLE,
    "feature_not_enabled": Failure.UNSUPPORTED,
    "unknown_method": Failure.UNSUPPORTED,
    **dict.fromkeys(UNAUTHORIZED, Failure.UNAUTHORIZED),
}
"""Slack's refusals by code; any other (``channel_not_found``, ``not_in_channel``,
``is_archived``, ...) is ``REJECTED``."""


def metadata(key: str) -> dict[str, Any]:
    return {"event_type": EVENT_TYPE, "event_payload": {"id": key}}


def _key_of(message: Mapping[str, Any]) -> object:
    meta = message.get("metadata")
    if not isinstance(meta, dict) or meta.get("event_type") != EVENT_TYPE:
        return None
    payload = meta.get("event_payload")
    return payload.get("id") if isinstance(payload, dict) else None


class SlackWire:
    name = "slack"

    def __init__(
        self, client: AsyncWebClient, config: SlackConfig, identity: dict[str, str], scale: float
    ) -> None:
        self.client = client
        self.native = config.streaming == "auto"
        """Answers in threads stream with Slack's own streams (until one is refused)."""
        self.assistant = config.assistant_threads
        self.team_id = identity["team_id"]
        self.bot_user = identity["user_id"]
        self.recipients: dict[str, str] = {}
        """The user each conversation's current turn answers (a stream in a channel
        names its recipient)."""
        self._questions: set[str] = set()
        self._sent: dict[str, float] = {}
        """When each send still unanswered was made (its check looks from then on)."""
        self._starts: dict[str, str] = {}
        """Streams started and still unanswered: ``oldest`` for their check."""
        self.limits = WireLimits(
            message_units=TEXT_PART,
            caption_units=TEXT_PART,
            chat_min_interval=max(config.min_edit_interval, 1.0 / (POSTS_PER_SECOND * scale)),
            global_rate=TIER3_PER_MINUTE * scale / 60.0,
            resend="find",
            typing_interval=90.0,
            global_burst=3,
        )
        self.reads = GlobalPacer(self.limits.global_rate, self.limits.global_burst)
        """The catch-up's reads, paced apart: a 429 on the history (a non-Marketplace
        app's 1 call a minute) holds them, not the answers."""

    def render(self, source: str) -> str:
        return to_mrkdwn(source)

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, SlackApiError):
            status = exc.response.status_code
            code = error_code(exc)
            if status == 429 or code == "ratelimited":
                # A method's tier is the workspace's; only posts count per channel.
                per_channel = str(exc.response.api_url).endswith("/chat.postMessage")
                asked = header_wait(exc.response.headers)
                wait = DEFAULT_WAIT if asked is None else max(1.0, asked)
                return Classified(
                    Failure.RETRY_AFTER, "ratelimited", wait, everywhere=not per_channel
                )
            if status >= 500:
                return Classified(Failure.MAYBE_SENT, f"HTTP {status}")
            return Classified(KINDS.get(code, Failure.REJECTED), code)
        if isinstance(exc, aiohttp.ClientConnectorError):
            return Classified(Failure.NOT_SENT, type(exc).__name__)
        if isinstance(exc, UNANSWERED):
            return Classified(Failure.MAYBE_SENT, type(exc).__name__)
        return None

    async def send(self, chat: Place, message: Outgoing[Blocks]) -> str:
        if message.controls is not None:
            self._questions.add(message.key)
        self._sent.setdefault(message.key, time.time())
        data = await self.client.chat_postMessage(
            channel=chat.channel,
            thread_ts=chat.thread_ts,
            metadata=metadata(message.key),
            text=escape(message.text) if message.plain else message.text,
            blocks=message.controls,
        )
        self._sent.pop(message.key, None)
        return str(data.get("ts") or "")

    async def edit(self, chat: Place, ref: str, message: Outgoing[Blocks]) -> None:
        text = escape(message.text) if message.plain else message.text
        blocks = message.controls
        if blocks is None and message.key in self._questions:
            blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
        args: dict[str, Any] = {"channel": chat.channel, "ts": ref, "text": text, "blocks": blocks}
        try:
            await self.client.chat_update(**args)
        except SlackApiError as exc:
            if error_code(exc) != "cant_update_message":
                raise
            # Maybe a stream an earlier process left open: stop it, then edit it.
            try:
                await self.client.chat_stopStream(channel=chat.channel, ts=ref)
            except SlackApiError:
                raise exc from None
            await self.client.chat_update(**args)
        self._questions.discard(message.key)

    async def upload(
        self, chat: Place, image: ToolImage | VoiceClip, caption: Outgoing[Blocks]
    ) -> str:
        """``files.uploadV2`` (three calls): an image, or the answer read aloud as an
        audio file. Its share carries no key to look for, so one whose answer was lost
        counts as shown: never twice."""
        try:
            await self.client.files_upload_v2(
                channel=chat.channel,
                thread_ts=chat.thread_ts,
                filename=image.name,
                content=image.data,
                title=image.name,
                initial_comment=escape(caption.text),
            )
        except Exception as exc:
            kind = self.classify(exc)
            if kind is None or kind.failure is not Failure.MAYBE_SENT:
                raise
            log.warning("slack_image_in_doubt", reason=kind.reason)
        return ""

    async def typing(self, chat: Place, thread: str | None) -> None:
        """Slack shows it under an assistant thread until the bot's reply."""
        if self.assistant and chat.is_dm and chat.thread_ts is not None:
            await self.client.assistant_threads_setStatus(
                channel_id=chat.channel,
                thread_ts=chat.thread_ts,
                status="is thinking…",
            )

    async def find(self, chat: Place, key: str) -> str | None:
        started = self._starts.get(key)
        if started is not None:
            found = await self._find_stream(chat, started)
        else:
            sent = self._sent.get(key)
            recent = await self._recent(chat, None if sent is None else f"{sent - LOOKBACK:.6f}")
            found = next((str(m["ts"]) for m in recent if _key_of(m) == key and m.get("ts")), None)
        if found is not None:
            self._starts.pop(key, None)
            self._sent.pop(key, None)
        return found

    async def _recent(self, chat: Place, oldest: str | None) -> list[dict[str, Any]]:
        read: Callable[..., Awaitable[Any]] = self.client.conversations_history
        if chat.thread_ts is not None:
            read = partial(self.client.conversations_replies, ts=chat.thread_ts)
        data = await read(
            channel=chat.channel, include_all_metadata="true", limit=PROBE_DEPTH, oldest=oldest
        )
        return [m for m in data.get("messages") or [] if isinstance(m, dict)]

    async def missed(self, chat: str, mark: int) -> list[Any]:
        """The kit's catch-up reader: what came after ``mark`` in the conversation (its
        top level: thread replies are not in the history), oldest first, as events; the
        newest :data:`CATCH_UP_MOST` when there are more (Slack pages from the newest)."""
        read = partial(self.client.conversations_history, channel=chat)
        oldest, cursor, more = f"{mark // 1_000_000}.{mark % 1_000_000:06d}", None, True
        got: list[dict[str, Any]] = []
        while more and len(got) < CATCH_UP_MOST:
            page = partial(read, oldest=oldest, limit=CATCH_UP_MOST - len(got), cursor=cursor)
            data = await paced(self.reads, self.classify, page)
            got += [m for m in data.get("messages") or [] if isinstance(m, dict)]
            cursor = (data.get("response_metadata") or {}).get("next_cursor")
            more = bool(data.get("has_more") and cursor)
        if more or len(got) > CATCH_UP_MOST:
            log.warning("slack_catch_up_cut", chat=chat, most=CATCH_UP_MOST)
        return [{**m, "channel": chat} for m in reversed(got[:CATCH_UP_MOST])]

    async def _find_stream(self, chat: Place, oldest: str) -> str | None:
        """The bot's newest message in the thread after ``oldest`` that carries no key
        and no file: a stream whose start went unanswered."""
        ours = [
            ts
            for message in await self._recent(chat, oldest)
            if isinstance(ts := message.get("ts"), str)
            and ts != chat.thread_ts
            and float(ts) > float(oldest)
            and message.get("user") == self.bot_user
            and not message.get("files")
            and _key_of(message) is None
        ]
        return ours[-1] if ours else None

    # -- Slack's own streams (the kit's Appending) --------------------------------------

    def appends(self, chat: Place, thread: str | None) -> bool:
        return self.native and chat.thread_ts is not None and bool(self.bot_user)

    async def start(self, chat: Place, message: Outgoing[Any]) -> str:
        assert chat.thread_ts is not None, "appends() only in a thread"
        self._starts.setdefault(message.key, message.reply_to or f"{time.time() - 60:.6f}")
        try:
            data = await self.client.chat_startStream(
                channel=chat.channel,
                thread_ts=chat.thread_ts,
                markdown_text=message.text,
                recipient_user_id=None if chat.is_dm else self.recipients.get(chat.conversation_id),
                recipient_team_id=None if chat.is_dm else self.team_id,
            )
        except SlackApiError as exc:
            kind = self.classify(exc)
            if kind is not None and kind.failure in {Failure.REJECTED, Failure.UNSUPPORTED}:
                log.info("slack_streaming_unavailable", error=kind.reason)
                self.native = False
            raise
        self._starts.pop(message.key, None)
        return str(data.get("ts") or "")

    async def append(self, chat: Place, ref: str, text: str) -> None:
        await self.client.chat_appendStream(channel=chat.channel, ts=ref, markdown_text=text)

    async def finish(self, chat: Place, ref: str, text: str, key: str) -> None:
        await self.client.chat_stopStream(
            channel=chat.channel,
            ts=ref,
            markdown_text=text or None,
            metadata=metadata(key),
        )
