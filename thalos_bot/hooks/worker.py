"""The hook worker: runs each stored delivery once, as a subagent run, and delivers.

The scheduler's path for a one-shot job: the run goes through the subagent runner (the
person's budget and the runner's limits apply, as for a schedule), and its answer, or
the notice of its failure, goes to the hook's conversation through the durable outbox.

Each delivery is claimed in the database before it runs. Its result is kept on the row
before it is handed to the outbox under a key of its own (``hook-<id>``), and the row
is done only after: a daemon killed at any point either runs it again (killed mid-run;
one more attempt at most, then a notice) or hands the kept result over again, which the
outbox takes once. At start, a daemon alone on its database takes back every row left
unfinished; replicas take those whose claim ran out (:data:`RECHECK` apart).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.ports import DeliveryAllowlist
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.hooks.store import HookDelivery, HookStore, ResultKind
from thalos_bot.schedules.scheduler import FAILURES
from thalos_bot.subagents.outcome import RunError
from thalos_bot.subagents.runner import CANCEL_GRACE, SubagentRunner

log = structlog.get_logger(__name__)

RECHECK = 60.0
"""Seconds between two looks for rows whose claim ran out (a replica died)."""
CLAIM_MARGIN = 60.0
"""Seconds a claim outlasts the run's deadline."""
GAVE_UP = (
    "The webhook {hook} did not finish: the daemon stopped during its run twice, so it "
    "was not run again."
)


class KeyedDelivery(Protocol):
    """The outbox's :meth:`~thalos_bot.service.outbox.Outbox.deliver`, with its key."""

    async def deliver(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        text: str,
        *,
        kind: ResultKind,
        key: str | None = None,
    ) -> None: ...


class HookWorker:
    def __init__(
        self,
        store: HookStore,
        runner: SubagentRunner,
        delivery: KeyedDelivery,
        *,
        replica: str,
        alone: bool,
        clock: Callable[[], datetime] = utc_now,
        allowlist: DeliveryAllowlist | None = None,
    ) -> None:
        """``alone``: no other process shares the database, so every unfinished row
        at start is one a dead predecessor left."""
        self.store = store
        self.runner = runner
        self.delivery = delivery
        self.replica = replica
        self.alone = alone
        self.clock = clock
        self.allowlist = allowlist
        self.span = runner.budget.deadline + CANCEL_GRACE + CLAIM_MARGIN
        self._wake = anyio.Event()

    def wake(self) -> None:
        """Look at the table now (a delivery was let in)."""
        self._wake.set()

    async def run(self) -> None:
        """Serve deliveries until cancelled."""
        async with anyio.create_task_group() as runs:
            everyone = self.alone
            while True:
                self._wake = anyio.Event()
                await self.start_claimed(runs, everyone=everyone)
                everyone = False
                with anyio.move_on_after(RECHECK):
                    await self._wake.wait()

    async def start_claimed(self, runs: TaskGroup, *, everyone: bool = False) -> int:
        """Claim what is open and start each in ``runs``; how many."""
        try:
            claimed = await self.store.claim(
                self.clock(), self.replica, self.span, everyone=everyone
            )
        except Exception:
            log.exception("hooks_unavailable")
            return 0
        for delivery in claimed:
            runs.start_soon(self.run_one, delivery, name=f"hook-{delivery.id}")
        return len(claimed)

    async def run_one(self, delivery: HookDelivery) -> None:
        bound = log.bind(hook=delivery.hook, delivery=delivery.id)
        try:
            if delivery.state == "running":
                text, kind = await self._outcome(delivery, bound)
                await self.store.finish(delivery.id, text, kind, self.clock())
            else:
                assert delivery.result is not None
                assert delivery.result_kind is not None
                text, kind = delivery.result, delivery.result_kind
                bound.info("hook_result_resumed")
            await self._deliver(delivery, text, kind, bound)
            await self.store.done(delivery.id, self.clock())
        except Exception:  # noqa: BLE001 - logged; the row stays claimed
            # Left claimed: taken back (and tried once more at most) when the claim ends.
            bound.exception("hook_run_failed")

    async def _outcome(
        self, delivery: HookDelivery, bound: structlog.BoundLogger
    ) -> tuple[str, ResultKind]:
        if delivery.gave_up:
            bound.warning("hook_run_given_up", attempts=delivery.attempts - 1)
            return GAVE_UP.format(hook=delivery.hook), "notice"
        address = delivery.deliver_to
        reason = None
        if address is not None and self.allowlist is not None:
            reason = self.allowlist.refusal(address)
        if reason is not None:
            bound.warning("hook_skipped", deliver_to=str(address), reason=reason)
            return f"skipped: {reason}", "notice"
        bound.info("hook_run", agent=delivery.agent_id, attempt=delivery.attempts)
        outcome = await self.runner.run(
            delivery.agent_id, delivery.task, delivery.caller, reply_to=address
        )
        if isinstance(outcome, RunError):
            text = f"The webhook {delivery.hook} did not finish: {FAILURES[outcome.code]}."
            if outcome.partial_text.strip():
                text += f"\n\nWhat it had so far:\n{outcome.partial_text.strip()}"
            return text, "notice"
        return outcome.text or "(The webhook's run finished without an answer.)", "answer"

    async def _deliver(
        self, delivery: HookDelivery, text: str, kind: ResultKind, bound: structlog.BoundLogger
    ) -> None:
        address = delivery.deliver_to
        if address is None or text.startswith("skipped: "):
            bound.info("hook_result_kept", kind=kind, chars=len(text), deliver_to=None)
            return
        await self.delivery.deliver(
            address.channel_id,
            address.conversation_id,
            text,
            kind=kind,
            key=f"hook-{delivery.id}",
        )
        bound.info("hook_result_sent", kind=kind, deliver_to=str(address))
