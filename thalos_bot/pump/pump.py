"""The channel pump: sources in, turns through the runtime, deliveries out.

For every inbound message the pump first parses commands, then applies the lifecycle of
the conversation:

* **unbound** — the first message creates a session and binds it, silently;
* **fresh** — the message runs as a turn;
* **idle** — past ``idle_timeout`` the old session is closed, a new one bound, the user
  told, and the message runs;
* **busy** — a turn is running here: the message is refused at once, never queued;
  except once the turn's answer is in (its terminal event came): the user has it, or is
  about to, and only its last steps remain (the final's confirmation, tool images, the
  answer read aloud), so the message waits for them and runs as the next turn. A
  command waits only for the answer's text to be out: its reply may come before that
  turn's files (``/new`` and ``/end``, which change the session the turn's end still
  writes to, wait for all of it);
* **dead** — the runtime no longer knows the session: the binding is removed and the
  user asked to resend (deliberately not retried).

Conversations are independent: each message is handled in its own task, and a per
conversation lock only orders the short dispatch step, never a running turn.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels import notices
from thalos_bot.channels.ports import (
    ChannelAdapter,
    ChannelSource,
    InboundMessage,
    Notice,
    SourceNotice,
    TurnStarted,
)
from thalos_bot.config.models import PumpSettings
from thalos_bot.domain.address import Address
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import (
    Info,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolImage,
    TurnCompleted,
    TurnFailed,
)
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.remembering import Remembering
from thalos_bot.pump.approvals import approver_for
from thalos_bot.pump.command_handler import (
    CommandEnv,
    PendingSchedules,
    SpendingSource,
    run_command,
)
from thalos_bot.pump.commands import Command, parse_command
from thalos_bot.pump.flush import (
    FlushTicker,
    Lane,
    adapter_interval,
    finest_interval,
    safe_deliver,
    ticks_per,
)
from thalos_bot.pump.linking import Linking
from thalos_bot.pump.slots import slot_of
from thalos_bot.pump.speaking import Speaking
from thalos_bot.pump.turn_text import model_text
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.runtime.protocol import AgentRuntime, TurnRequest
from thalos_bot.speech.base import SpeechError
from thalos_bot.storage.conversations import Binding, ConversationMap
from thalos_bot.storage.protocol import OutboxAddress
from thalos_bot.storage.turn_journal import TurnJournal

log = structlog.get_logger(__name__)

Key = tuple[ChannelId, ConversationId]
DEAD_CODES = frozenset({ErrorCode.SESSION_NOT_FOUND, ErrorCode.SESSION_CLOSED})
SHUTDOWN_DELIVERY_BOUND = 5.0
"""Seconds granted after the grace period for cancelled turns to deliver their ending."""


@dataclass(slots=True)
class _ActiveTurn:
    key: Key
    session_id: SessionId
    caller: SecurityContext
    lane: Lane
    slot: ConversationId
    """The binding key of the session (see :mod:`thalos_bot.pump.slots`)."""
    stopped_for_shutdown: bool = False
    answered: bool = False
    """The turn's terminal event came: from the user's view the turn is over."""
    answers: str | None = None
    """The :attr:`InboundMessage.message_ref` of the message the turn answers."""
    text_out: anyio.Event = field(default_factory=anyio.Event)
    """Set once the answer's text is delivered (only its files may follow)."""
    ended: anyio.Event = field(default_factory=anyio.Event)
    """Set when the turn releases its conversation."""


def _past_files(command: Command | None) -> bool:
    """May ``command``'s reply come before the files of the answer just given? Any
    command but those that change the session that turn's end still writes to."""
    return command is not None and command.name not in {"new", "end"}


def _taken_again(message: InboundMessage, running: _ActiveTurn) -> bool:
    """``message`` is the one ``running`` answers, handed over again by the source (a
    shared inbox's row taken again under a new lease token, which fences that turn)."""
    return (
        message.redelivered
        and message.message_ref is not None
        and (message.message_ref == running.answers)
    )


@dataclass(slots=True)
class _Idle:
    """An event that is set whenever no turn is running."""

    event: anyio.Event = field(default_factory=anyio.Event)

    def __post_init__(self) -> None:
        self.event.set()


class ChannelPump:
    def __init__(
        self,
        *,
        runtime: AgentRuntime,
        catalog: AgentCatalog,
        conversations: ConversationMap,
        adapters: Mapping[ChannelId, ChannelAdapter],
        settings: PumpSettings,
        clock: Callable[[], datetime] = utc_now,
        on_tick: Callable[[], object] | None = None,
        tool_status: Callable[[], list[str]] | None = None,
        spending: SpendingSource | None = None,
        keep_finals: bool = False,
        awaiting_approval: Callable[[SessionId], list[str]] | None = None,
        pending_schedules: PendingSchedules | None = None,
        linking: Linking | None = None,
        speaking: Speaking | None = None,
        budgets: SpendingLimits | None = None,
        remembering: Remembering | None = None,
        journal: TurnJournal | None = None,
    ) -> None:
        self.runtime = runtime
        self.catalog = catalog
        self.conversations = conversations
        self.adapters = dict(adapters)
        self.settings = settings
        self.clock = clock
        self.keep_finals = keep_finals
        """Each turn's final is written with the turn (an outbox row) and reaches the
        channel through it: the adapters the pump is given deliver a final that names
        its row through the outbox (see :mod:`thalos_bot.service.finals`)."""
        self.journal = journal
        """Where each turn is noted while under way (a kill leaves it there for the next
        start to tell its conversation; see :mod:`thalos_bot.storage.turn_journal`)."""
        tick = finest_interval(settings.flush_interval, self.adapters.values())
        every = ticks_per(settings.flush_interval, tick)
        self.ticker = FlushTicker(tick, on_tick, on_tick_every=every)
        self._env = CommandEnv(
            runtime,
            catalog,
            conversations,
            clock,
            tool_status,
            spending=spending,
            awaiting_approval=awaiting_approval,
            pending_schedules=pending_schedules,
            linking=linking,
            speaking=speaking,
            budgets=budgets,
            remembering=remembering,
        )
        self._active: dict[Key, _ActiveTurn] = {}
        self._locks: dict[Key, anyio.Lock] = {}
        self._idle = _Idle()
        self._readers = anyio.CancelScope()
        self._stopping = False

    def _every(self, adapter: ChannelAdapter) -> int:
        interval = adapter_interval(adapter, self.settings.flush_interval)
        return ticks_per(interval, self.ticker.interval)

    # -- running ------------------------------------------------------------------

    async def run(self, sources: Sequence[ChannelSource]) -> None:
        """Serve ``sources`` until they are exhausted (then let turns finish) or until
        :meth:`stop` (then give turns the grace period, and cancel the rest)."""
        async with anyio.create_task_group() as outer:
            outer.start_soon(self.ticker.run)
            async with anyio.create_task_group() as work:
                with self._readers:
                    async with anyio.create_task_group() as readers:
                        for source in sources:
                            readers.start_soon(self._read, source, work)
                if self._stopping:
                    work.start_soon(self._drain, work)
            outer.cancel_scope.cancel()
        log.info("pump_stopped")

    def stop(self) -> None:
        """Begin a graceful shutdown: stop reading, let turns finish within the grace."""
        if not self._stopping:
            log.info("pump_stopping", running_turns=len(self._active))
        self._stopping = True
        self._readers.cancel()

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def running_turns(self) -> int:
        return len(self._active)

    async def _read(self, source: ChannelSource, work: TaskGroup) -> None:
        async for message in source.messages():
            if isinstance(message, SourceNotice):
                work.start_soon(self._say, source.channel_id, message)
            else:
                work.start_soon(self.handle, message)

    async def _say(self, channel_id: ChannelId, said: SourceNotice) -> None:
        """A notice from a channel's receiving side, delivered like the pump's own."""
        adapter = self.adapters.get(channel_id)
        if adapter is not None:
            await safe_deliver(adapter, said.conversation_id, said.notice)

    async def _drain(self, work: TaskGroup) -> None:
        with anyio.move_on_after(self.settings.shutdown_grace):
            await self._idle.event.wait()
        for active in list(self._active.values()):
            active.stopped_for_shutdown = True
            try:
                await self.runtime.cancel(active.session_id, active.caller)
            except AgentError:
                log.warning("shutdown_cancel_failed", session=active.session_id)
        with anyio.move_on_after(SHUTDOWN_DELIVERY_BOUND):
            await self._idle.event.wait()
        if self._active:
            log.warning("shutdown_forced", running_turns=len(self._active))
            work.cancel_scope.cancel()

    # -- one message --------------------------------------------------------------

    async def handle(self, message: InboundMessage) -> None:
        """Deal with one inbound message completely; never raises."""
        adapter = self.adapters.get(message.channel_id)
        try:
            if adapter is None:
                log.error("no_adapter_for_channel", channel=message.channel_id)
                return
            if self._env.linking is not None:
                message = await self._env.linking.attributed(message)
            active = await self._dispatch(message, adapter)
            if active is not None:
                await self._run_turn(active, message, adapter)
        except Exception:
            log.exception(
                "message_failed", channel=message.channel_id, conversation=message.conversation_id
            )
            if adapter is not None:
                error = AgentError(ErrorCode.INTERNAL_ERROR)
                await safe_deliver(adapter, message.conversation_id, Notice(error.detail, "error"))
        finally:
            if message.handled is not None:
                message.handled.set()

    async def _dispatch(
        self, message: InboundMessage, adapter: ChannelAdapter
    ) -> _ActiveTurn | None:
        """Under the conversation's lock: commands, lifecycle, and claiming the turn."""
        key: Key = (message.channel_id, message.conversation_id)
        conversation = message.conversation_id
        async with self._lock(key):
            running = self._active.get(key)
            command = parse_command(message.text)
            if running is not None and running.answered and _past_files(command):
                # The answer is in and only its text is awaited (a send still being
                # confirmed): the reply follows that text, maybe before its files.
                await running.text_out.wait()
                running = None
            elif running is not None and (running.answered or _taken_again(message, running)):
                # Its last steps (a send still being confirmed, its files): the user has
                # read the answer, so this message runs next rather than "busy".
                # Or the shared inbox hands over again the message this turn answers:
                # its lease moved on, so this turn's commit is refused; it runs after it.
                await running.ended.wait()
                running = self._active.get(key)
            if command is not None:
                notice = await run_command(command, message, self._env, busy=running is not None)
                if notice is not None:
                    await safe_deliver(adapter, conversation, replace(notice, command=True))
                return None
            if running is not None:
                await safe_deliver(adapter, conversation, Notice(notices.busy(), "warning"))
                return None
            if self._stopping:
                await self._not_now(message, adapter)
                return None
            if not message.text.strip() and not message.attachments:
                await safe_deliver(
                    adapter, conversation, Notice(notices.empty_message(), "warning")
                )
                return None
            binding = await self._session_for(message, adapter)
            if binding is None:
                return None
            if self.stopping:  # stop() came while we were binding: do not start now
                await self._not_now(message, adapter)
                return None
            active = _ActiveTurn(
                key,
                binding.session_id,
                message.sender.context,
                Lane(adapter, conversation, self._every(adapter)),
                binding.conversation_id,
                answers=message.message_ref,
            )
            if not self._active:  # 0 → 1: the old event is set, nobody waits on it
                self._idle.event = anyio.Event()
            self._active[key] = active
            return active

    async def _session_for(
        self, message: InboundMessage, adapter: ChannelAdapter
    ) -> Binding | None:
        channel, conversation = message.channel_id, message.conversation_id
        caller = message.sender.context
        now = self.clock()
        slot, binding = await slot_of(self.conversations, self.runtime, message)
        if binding is None:
            return await self._bind_new(message, self.catalog.default_id, now, slot)
        info = await self.runtime.session_info(binding.session_id)
        if info is None or info.status == "closed" or info.owner != caller.id:
            await self._report_dead(message, adapter, binding.session_id, slot)
            return None
        idle_for = now - binding.last_activity
        limit = self.settings.idle_timeout  # None: "off", never idle
        if limit is not None and idle_for > timedelta(seconds=limit):
            try:
                await self.runtime.close_session(binding.session_id, caller)
            except AgentError as exc:
                log.info("idle_close_skipped", session=binding.session_id, code=exc.code.value)
            agent = self.catalog.find(binding.agent_id) or self.catalog.default
            fresh = await self._bind_new(message, agent.id, now, slot)
            log.info(
                "session_rolled_over",
                channel=channel,
                conversation=conversation,
                old_session=binding.session_id,
                new_session=fresh.session_id,
                idle_s=int(idle_for.total_seconds()),
            )
            await safe_deliver(
                adapter, conversation, Notice(notices.idle_rollover(idle_for, agent))
            )
            return fresh
        await self.conversations.touch(channel, slot, now)
        return binding

    async def _bind_new(
        self, message: InboundMessage, agent_id: str, now: datetime, slot: ConversationId
    ) -> Binding:
        session = await self.runtime.create_session(agent_id, message.sender.context)
        binding = Binding(message.channel_id, slot, session.id, session.agent_id, now)
        await self.conversations.bind(binding)
        return binding

    async def _report_dead(
        self,
        message: InboundMessage,
        adapter: ChannelAdapter,
        session_id: SessionId,
        slot: ConversationId,
    ) -> None:
        await self.conversations.unbind(message.channel_id, slot)
        log.warning(
            "session_dead",
            channel=message.channel_id,
            conversation=message.conversation_id,
            session=session_id,
        )
        await safe_deliver(
            adapter, message.conversation_id, Notice(notices.dead_session(), "warning")
        )

    async def _run_turn(
        self, active: _ActiveTurn, message: InboundMessage, adapter: ChannelAdapter
    ) -> None:
        lane = active.lane
        terminal: TurnCompleted | TurnFailed | None = None
        images: list[ToolImage] = []
        entry: int | None = None
        self.ticker.register(lane)
        try:
            entry = await self._journal_begin(message)
            started = TurnStarted(answers=message.message_ref)
            await safe_deliver(adapter, message.conversation_id, started)
            async with anyio.create_task_group() as group:
                group.start_soon(lane.run)
                address = None
                if self.keep_finals:
                    address = OutboxAddress(
                        message.channel_id,
                        message.conversation_id,
                        f"out-{secrets.token_hex(8)}",
                        begun=entry,
                    )
                request = TurnRequest(
                    active.session_id,
                    active.caller,
                    model_text(message),
                    deliver_to=address,
                    attachments=message.attachments,
                    approver=approver_for(adapter, message.conversation_id),
                    reply_to=Address(message.channel_id, message.conversation_id),
                )
                try:
                    async for event in self.runtime.run_turn_streaming(request):
                        if isinstance(event, TextDelta):
                            lane.add_text(event.text)
                        elif isinstance(event, ToolCallStarted | ToolCallFinished):
                            if self.settings.tool_status:
                                lane.add_activity(event)
                        elif isinstance(event, TurnCompleted | TurnFailed):
                            terminal = event
                            active.answered = True
                            lane.finish(event)
                            # The turn is kept (its answer in the outbox): a kill from
                            # now on leaves the answer to be delivered, not a cut turn.
                            await self._journal_end(entry)
                            entry = None
                        elif isinstance(event, ToolImage):
                            images.append(event)
                        elif isinstance(event, Info) and (said := notices.from_info(event)):
                            await safe_deliver(
                                adapter, message.conversation_id, Notice(said, "warning")
                            )
                except Exception:
                    log.exception("turn_stream_failed", session=active.session_id)
                if terminal is None:
                    # The runtime guarantees a terminal event; if a bug broke that, still
                    # close what TurnStarted opened (a typing indicator, a draft).
                    terminal = TurnFailed(active.session_id, AgentError(ErrorCode.INTERNAL_ERROR))
                    lane.finish(terminal)
            active.text_out.set()
            # After the answer: the images tools made during the turn (once, in order),
            # then the answer read aloud; a command's reply may come before them.
            for image in images:
                await safe_deliver(adapter, message.conversation_id, image)
            if isinstance(terminal, TurnCompleted) and terminal.text.strip():
                await self._speak(message, adapter, active.session_id, terminal)
        except anyio.get_cancelled_exc_class():
            # Cut with no ending said (a stop that had to force it, the daemon failing):
            # the entry stays, and the next start tells the conversation.
            entry = None
            raise
        finally:
            self.ticker.unregister(lane)
            self._release(active)
            with anyio.CancelScope(shield=True):
                await self._journal_end(entry)
        if terminal is not None:
            await self._after_turn(active, message, adapter, terminal)

    async def _journal_begin(self, message: InboundMessage) -> int | None:
        if self.journal is None:
            return None
        try:
            return await self.journal.begin(
                message.channel_id, message.conversation_id, replayed=message.replayed_if_cut
            )
        except Exception:  # the turn runs all the same; only a kill would go untold
            log.exception("turn_journal_failed", conversation=message.conversation_id)
            return None

    async def _journal_end(self, entry: int | None) -> None:
        """Forget the turn's entry (None: there is none, or it is forgotten already)."""
        if entry is None or self.journal is None:
            return
        try:
            await self.journal.end(entry)
        except Exception:  # left for the next start, which then tells one turn too many
            log.exception("turn_journal_failed", entry=entry)

    async def _speak(
        self,
        message: InboundMessage,
        adapter: ChannelAdapter,
        session: SessionId,
        terminal: TurnCompleted,
    ) -> None:
        """Read the answer aloud when the conversation wants it; a failure is one notice
        (the text is there already). Each clip names the turn's outbox row, so the
        outbox keeps it too (see :mod:`thalos_bot.service.clip_files`)."""
        speaking = self._env.speaking
        if speaking is None or not await speaking.wanted(message):
            return
        try:
            clips = await speaking.clips(session, terminal.text, turn=terminal.delivery)
        except SpeechError as exc:
            log.warning("answer_not_spoken", reason=exc.user_message)
            notice = Notice(notices.speech_failed(exc.user_message), "warning")
            await safe_deliver(adapter, message.conversation_id, notice)
            return
        for clip in clips:
            await safe_deliver(adapter, message.conversation_id, clip)

    async def _after_turn(
        self,
        active: _ActiveTurn,
        message: InboundMessage,
        adapter: ChannelAdapter,
        terminal: TurnCompleted | TurnFailed,
    ) -> None:
        if isinstance(terminal, TurnFailed) and terminal.error.code in DEAD_CODES:
            await self._report_dead(message, adapter, active.session_id, active.slot)
            return
        await self.conversations.touch(message.channel_id, active.slot, self.clock())
        if isinstance(terminal, TurnCompleted) and not terminal.text.strip():
            await safe_deliver(
                adapter, message.conversation_id, Notice(notices.no_answer(), "info")
            )
        if active.stopped_for_shutdown:
            await safe_deliver(
                adapter, message.conversation_id, Notice(notices.shutting_down(), "warning")
            )

    async def _not_now(self, message: InboundMessage, adapter: ChannelAdapter) -> None:
        """A message that came as the pump stops: left for the next process when its
        source hands it over again, else the person is told to ask again."""
        if message.redelivered:
            log.info(
                "message_left_for_redelivery",
                channel=message.channel_id,
                conversation=message.conversation_id,
            )
            return
        await safe_deliver(
            adapter, message.conversation_id, Notice(notices.shutting_down(), "warning")
        )

    def _release(self, active: _ActiveTurn) -> None:
        self._active.pop(active.key, None)
        active.text_out.set()
        active.ended.set()
        if not self._active:
            self._idle.event.set()

    @asynccontextmanager
    async def _lock(self, key: Key) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, anyio.Lock())
        try:
            async with lock:
                yield
        finally:
            stats = lock.statistics()
            if not stats.locked and stats.tasks_waiting == 0:
                self._locks.pop(key, None)
