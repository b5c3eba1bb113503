"""One conversation's deliveries, shown in order by one task.

The adapter puts each delivery in the conversation's lane and returns at once; the
lane's task talks to Slack. While an answer streams, the lane shows it:

- natively, with ``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream``
  (``markdown_text``), where the conversation is a thread (Slack streams only replies)
  and the workspace has the methods (the first refusal turns them off for the process);
- else by one message, posted and then edited (``chat.update``, mrkdwn ``text``).

Visible updates are at least ``min_edit_interval`` apart: flushes that come sooner are
merged and shown together when the interval ends. The final answer replaces the preview
(the first part) and posts the rest as messages of their own, each exactly once (see
:mod:`thalos_bot_slack.posting`); the outbox journal records how far it got, so a
restarted daemon resumes it without showing any part twice.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from thalos_bot.channels.delivery.outbox import failure_text
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.chunking import MARKDOWN_PART, TEXT_PART, split
from thalos_bot_slack.client import SlackApi
from thalos_bot_slack.config import StreamMode
from thalos_bot_slack.dialect import escape, to_mrkdwn
from thalos_bot_slack.errors import SlackCallError, SlackInDoubtError
from thalos_bot_slack.posting import find_stream, post_once
from thalos_bot_slack.uploads import upload_image

log = structlog.get_logger(__name__)

NOT_STREAMING = "message_not_in_streaming_state"


@dataclass(slots=True)
class Final:
    text: str
    journal: DeliveryJournal | None
    ends_turn: bool


@dataclass(slots=True)
class Question:
    text: str
    blocks: list[dict[str, Any]]
    posted: anyio.Event = field(default_factory=anyio.Event)
    ts: str | None = None
    failed: bool = False
    withdrawn: bool = False


@dataclass(slots=True)
class Outcome:
    question: Question
    text: str


Item = Delivery | Final | Question | Outcome


@dataclass(slots=True)
class Shared:
    """What every lane of the workspace shares."""

    api: SlackApi
    mode: StreamMode
    min_interval: float
    team_id: str = ""
    native: bool = True
    """False once the workspace refused chat.startStream."""
    assistant: bool = False
    """Assistant threads: a turn starts with the thread's "is thinking…" status."""
    recipients: dict[str, str] = field(default_factory=dict)
    """The user each conversation's current turn answers (streaming in a channel names
    its recipient)."""
    bot_user: str = ""
    """The bot's own member id (a stream whose start went unanswered is looked for
    among its messages)."""


@dataclass(slots=True)
class Turn:
    streamed: str = ""
    ts: str | None = None
    native: bool = False
    stream_open: bool = False
    shown: str = ""
    last_visible: float = -math.inf
    dirty: bool = False
    broken: bool = False
    after: str | None = None
    nonce: str = field(default_factory=lambda: secrets.token_hex(6))


class Lane:
    def __init__(self, place: Place, shared: Shared) -> None:
        self.place = place
        self.shared = shared
        self.api = shared.api
        self._send, self._receive = anyio.create_memory_object_stream[Item](math.inf)
        self.pending = 0
        self._idle = anyio.Event()
        self._idle.set()
        self.turn = Turn()

    def put(self, item: Item) -> None:
        self.pending += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        self._send.send_nowait(item)

    async def wait_idle(self) -> None:
        while self.pending:
            await self._idle.wait()

    def close(self) -> None:
        self._send.close()

    async def run(self) -> None:
        with self._send:  # closed when the lane ends, however it ends
            await self._run()

    async def _run(self) -> None:
        async with self._receive:
            while True:
                item: Item | None = None
                wait = self._due_in()
                with anyio.move_on_after(wait):
                    try:
                        item = await self._receive.receive()
                    except anyio.EndOfStream:
                        return
                if item is None:
                    await self._guarded(self._preview())
                    continue
                try:
                    await self._guarded(self._handle(item))
                finally:
                    self.pending -= 1
                    if self.pending == 0:
                        self._idle.set()

    def _due_in(self) -> float:
        turn = self.turn
        if not turn.dirty:
            return math.inf
        return max(0.0, turn.last_visible + self.shared.min_interval - time.monotonic())

    async def _guarded(self, step: Any) -> None:
        """One delivery's failure is logged and ends there: the lane goes on."""
        try:
            await step
        except (SlackCallError, SlackInDoubtError) as exc:
            log.warning(
                "slack_delivery_failed",
                conversation=self.place.conversation_id,
                method=getattr(exc, "method", ""),
                error=getattr(exc, "code", getattr(exc, "cause", "")),
            )
        except Exception as exc:  # noqa: BLE001 - one bad delivery never ends the lane
            log.error(  # noqa: TRY400 - by type only: the text may quote the answer
                "slack_delivery_crashed",
                conversation=self.place.conversation_id,
                error=type(exc).__name__,
            )

    # -- items -----------------------------------------------------------------------

    async def _handle(self, item: Item) -> None:
        if isinstance(item, TurnStarted):
            self.turn = Turn(after=item.answers)
            if self.shared.assistant and self.place.is_dm and self.place.thread_ts:
                await self._thinking()
        elif isinstance(item, TextUpdate):
            if item.text:
                self.turn.streamed += item.text
                self.turn.dirty = True
                if self._due_in() <= 0:
                    await self._preview()
        elif isinstance(item, TurnCompleted):
            await self._final(Final(item.text, None, ends_turn=True))
        elif isinstance(item, Final):
            await self._final(item)
        elif isinstance(item, TurnFailed):
            await self._failed(item)
        elif isinstance(item, Notice):
            await self._notice(item.text)
        elif isinstance(item, ToolImage):
            await upload_image(self.api, self.place, item)
        elif isinstance(item, Question):
            await self._ask(item)
        elif isinstance(item, Outcome):
            await self._settle(item)

    async def _thinking(self) -> None:
        """Slack shows it under the thread until the bot's reply (``assistant:write``)."""
        try:
            await self.api.call(
                "assistant.threads.setStatus",
                channel_id=self.place.channel,
                thread_ts=self.place.thread_ts,
                status="is thinking…",
            )
        except (SlackCallError, SlackInDoubtError) as exc:
            log.info("slack_status_not_set", error=getattr(exc, "code", "no answer"))

    # -- streaming -------------------------------------------------------------------

    def _wants_native(self) -> bool:
        return (
            self.shared.mode == "auto" and self.shared.native and self.place.thread_ts is not None
        )

    async def _preview(self) -> None:
        turn = self.turn
        turn.dirty = False
        turn.last_visible = time.monotonic()
        if self.shared.mode == "off" or turn.broken or not turn.streamed.strip():
            return
        if turn.ts is None and self._wants_native():
            turn.native = True
        try:
            if turn.native:
                await self._stream()
            else:
                await self._edit()
        except SlackInDoubtError:
            turn.broken = True  # the final still shows everything, as a message of its own
            raise
        except SlackCallError as exc:
            if turn.native and turn.ts is None and not exc.unauthorized:
                log.info("slack_streaming_unavailable", error=exc.code)
                self.shared.native = False
                turn.native = False
                await self._edit()
                return
            turn.broken = True
            raise

    async def _stream(self) -> None:
        turn = self.turn
        if turn.ts is None:
            first = turn.streamed[:MARKDOWN_PART]
            args: dict[str, Any] = {}
            if not self.place.is_dm:
                args["recipient_user_id"] = self.shared.recipients.get(self.place.conversation_id)
                args["recipient_team_id"] = self.shared.team_id
            try:
                data = await self.api.call(
                    "chat.startStream",
                    channel=self.place.channel,
                    thread_ts=self.place.thread_ts,
                    markdown_text=first,
                    **args,
                )
            except SlackInDoubtError:
                # Started or not? A stream that did start would stay open under the
                # final, showing a second, partial copy: look for it and carry on there.
                started = await find_stream(self.api, self.place, self.shared.bot_user, turn.after)
                if started is None:
                    raise
                log.info("slack_stream_found_after_doubt", conversation=self.place.conversation_id)
                data = {"ts": started}
            turn.ts = str(data.get("ts") or "")
            turn.stream_open = True
            turn.shown = first
            return
        delta = turn.streamed[len(turn.shown) : MARKDOWN_PART]
        if not delta or not turn.stream_open:
            return
        await self.api.call(
            "chat.appendStream", channel=self.place.channel, ts=turn.ts, markdown_text=delta
        )
        turn.shown += delta

    async def _edit(self) -> None:
        turn = self.turn
        text = turn.streamed
        if len(text) > TEXT_PART:
            text = text[: TEXT_PART - 1] + "…"
        if text == turn.shown:
            return
        if turn.ts is None:
            turn.ts = await post_once(
                self.api, self.place, f"{turn.nonce}:p", after=turn.after, text=to_mrkdwn(text)
            )
        else:
            await self.api.call(
                "chat.update", channel=self.place.channel, ts=turn.ts, text=to_mrkdwn(text)
            )
        turn.shown = text

    # -- the final answer ------------------------------------------------------------

    async def _final(self, final: Final) -> None:
        journal = final.journal
        progress: dict[str, Any] = dict(journal.progress) if journal is not None else {}
        turn = self.turn if final.ends_turn else Turn()
        if not progress:
            progress = {
                "nonce": turn.nonce + "f",
                "format": "markdown" if turn.native else "text",
                "done": 0,
                "preview": turn.ts if not turn.broken else None,
                "stream": turn.stream_open,
                "after": turn.after,
                "doubt": False,
            }
        markdown = progress.get("format") == "markdown"
        parts = split(final.text, MARKDOWN_PART if markdown else TEXT_PART) or ["…"]
        done = int(progress.get("done") or 0)
        try:
            while done < len(parts):
                part = parts[done]
                content = {"markdown_text": part} if markdown else {"text": to_mrkdwn(part)}
                preview = progress.get("preview")
                if done == 0 and isinstance(preview, str) and preview:
                    await self._replace(preview, part, content, bool(progress.get("stream")))
                else:
                    doubt = bool(progress.get("doubt"))
                    progress["doubt"] = True
                    if journal is not None:
                        await journal.save(progress)
                    await post_once(
                        self.api,
                        self.place,
                        f"{progress['nonce']}:{done}",
                        after=_str(progress.get("after")),
                        checked_first=doubt,
                        **content,
                    )
                done += 1
                progress.update(done=done, doubt=False, stream=False)
                if journal is not None and done < len(parts):
                    await journal.save(progress)
        except SlackCallError as exc:
            if exc.gone and journal is not None:
                await journal.refuse()
            raise
        finally:
            if final.ends_turn:
                self.turn = Turn(after=turn.after)
        if journal is not None:
            await journal.confirm()

    async def _replace(
        self, ts: str, part: str, content: Mapping[str, Any], stream_open: bool
    ) -> None:
        """Make the preview ``ts`` show ``part``: the rest of it appended as the stream
        stops, or one edit."""
        shown = self.turn.shown if self.turn.ts == ts else None
        if stream_open:
            rest = part[len(shown) :] if shown is not None and part.startswith(shown) else None
            try:
                await self.api.call(
                    "chat.stopStream",
                    channel=self.place.channel,
                    ts=ts,
                    markdown_text=rest or None,
                )
            except SlackCallError as exc:
                if exc.code != NOT_STREAMING:
                    raise
                rest = None  # stopped before (an earlier process): set the text outright
            self.turn.stream_open = False
            if rest is not None:
                return
        if shown is not None and shown == part:
            return  # the preview already shows exactly this part
        await self.api.call("chat.update", channel=self.place.channel, ts=ts, **content)

    async def _failed(self, failed: TurnFailed) -> None:
        """The partial answer, then the failure line, in place of the preview (the kit's
        :func:`failure_text`)."""
        await self._final(Final(failure_text(failed), None, ends_turn=True))

    async def _notice(self, text: str) -> None:
        await post_once(
            self.api,
            self.place,
            f"{secrets.token_hex(6)}:n",
            after=self.turn.after,
            text=escape(text),
        )

    # -- approval questions ----------------------------------------------------------

    async def _ask(self, question: Question) -> None:
        if question.withdrawn:
            question.posted.set()
            return
        try:
            question.ts = await post_once(
                self.api,
                self.place,
                f"{secrets.token_hex(6)}:q",
                after=self.turn.after,
                text=question.text,
                blocks=question.blocks,
            )
        except (SlackCallError, SlackInDoubtError):
            question.failed = True
            raise
        finally:
            question.posted.set()

    async def _settle(self, outcome: Outcome) -> None:
        ts = outcome.question.ts
        if ts is None:
            return
        section = {"type": "section", "text": {"type": "mrkdwn", "text": outcome.text}}
        await self.api.call(
            "chat.update",
            channel=self.place.channel,
            ts=ts,
            text=outcome.text,
            blocks=[section],
        )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
