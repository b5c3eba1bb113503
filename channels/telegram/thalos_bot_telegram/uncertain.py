"""Finding out whether a sendMessage (or sendPhoto) in doubt arrived, before sending it again.

After a timeout, a dropped connection or a 5xx answer, Telegram may or may not have
posted the message. Sending it again could show it twice; not sending it could lose it.
So the sender checks, with ``editMessageText`` (``editMessageCaption`` for a photo)
carrying exactly the text that was sent: on the message itself that answers "message is
not modified" and changes nothing; on a message of a user's, "message can't be edited";
on any id that is not a message of *this* chat (another chat's, a deleted one, or one
not given out yet), "message to edit not found".

The message, if it arrived, has an id above the *floor*: the
:attr:`~thalos_bot_telegram.counter.Counter.bound` of the counter it draws from (see
:mod:`thalos_bot_telegram.counter`) when the send began. Nothing else goes to the
chat while a send is in doubt, so no other message of the bot's can sit above the floor
in this chat for a probe to rewrite.

The ids above the floor are probed in turn, lowest first, skipping every id known to
belong to another chat's message (from the updates received, admitted or not, and from
the bot's own sends; this chat's own are probed all the same, as a restarted process
cannot tell its latest from the message in doubt). "not modified" means it arrived (its id
is adopted, nothing is sent again); "can't be edited" is a user's message (the next id
is probed). "not found" *at or below the bound* is a gap (another chat's message the
bot never heard of, or a deleted one), never an absence: the next id is probed.

"not found" *above the bound* means "did not arrive" only once every id below the
message's own is accounted for. In a supergroup that holds at once (a member's message
sent meanwhile exists there: "can't be edited"); only a message posted and deleted
while the send was in doubt, never seen by the bot, could hide the one that arrived
behind it. In the account's counter, another chat's message can sit between the floor
and the message, unknown yet, in two ways, and both are settled before concluding:

* an update still in flight: the bot may hear of a message (in another chat) only after
  the send. So, before concluding, the updates Telegram holds are fetched
  (:meth:`thalos_bot_telegram.poller.Poller.caught_up`: a getUpdates begun after the
  doubt arose, its batch noted): every message posted before the send is then known, and
  the bound is read again (ids up to it are probed as above);
* another send of the bot's, under way or itself in doubt, begun before this doubt
  arose: its id is unknown until it is resolved. The check waits for each such send; two
  in doubt at once each probe the first id above the bound, and if that id is "not
  found" in every chat whose send may hold it, none of them arrived (the lowest that did
  would hold it).

An id given out after the doubt arose bounds the message from above: a send of the
bot's begun later, or a message the bot hears of after it caught up (every earlier one
was in that batch). Once every id below such an id is probed or known, the message did
not arrive; so on a busy bot the check ends as soon as the next message comes in.

What bounds the probes: only unknown ids cost one (this chat's messages since the
floor, other sends in doubt, and after a restart every message of another chat since
the floor, which the new process cannot attribute: it only knows each chat's last id),
and the check gives up after :data:`MAX_PROBES` answered probes, sending again (logged
as an error). A probe that fails in transit (or meets a 429) is made again, after the
wait, and is not counted. Once polling has ended (shutdown, while answers drain) the
updates are peeked at rather than fetched (nothing is confirmed); if even that fails,
the check gives up too.

Assumed, as Telegram behaves: a request Telegram did not answer within the client's
timeout was processed before the failure was seen, or never will be; and a message
that takes an id from the account's counter reaches the bot as an update (a basic
group's messages that privacy mode keeps from the bot are not in its message box). Not
covered: after a crash, a send of the previous process whose answer it never read,
other than an outbox row's (those are journaled, and each counts as begun before
anything of the new process), is unknown to the new one. (The updates it confirmed are
not: their ids are written to the account's mark before they are acknowledged.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import NotRequired, TypedDict

from telegram import InlineKeyboardMarkup

from thalos_bot.channels.delivery.failure import Failure
from thalos_bot.channels.delivery.photo import PhotoView, SendPhoto
from thalos_bot.channels.delivery.question import QuestionView, SendQuestion
from thalos_bot.channels.delivery.view import Send, View
from thalos_bot_telegram.counter import Counter, Pending

MAX_PROBES = 50
"""Answered probes for one send before giving up and sending it again (each unknown id
on the way costs one: a user's message here, a gap, the first id above the bound)."""


class TextFields(TypedDict):
    """The text of a sendMessage, as sent (a probe must repeat it exactly)."""

    text: str
    parse_mode: NotRequired[str]


class QuestionFields(TextFields):
    """An approval question's sendMessage: its keyboard too (a probe without it would
    remove the keyboard rather than find the message unchanged)."""

    reply_markup: InlineKeyboardMarkup


class Verdict(Enum):
    ARRIVED = "arrived"
    """The message is there, at the probed id."""
    MISSING = "missing"
    """The send did not arrive."""
    NEXT = "next"
    """The probed id is not the message: the check goes on (see :meth:`InDoubt.plan`)."""
    AGAIN = "again"
    """The probe itself failed in transit or met flood control: it is made again."""
    GAVE_UP = "gave_up"
    """:data:`MAX_PROBES` probes found nothing, or the updates could not be fetched: the
    check is abandoned and the message sent again."""


class Plan(Enum):
    PROBE = "probe"
    """Probe :attr:`InDoubt.candidate`."""
    CATCH_UP = "catch_up"
    """Fetch the updates Telegram holds (then call :meth:`InDoubt.caught_up`)."""
    WAIT = "wait"
    """Wait for the counter to change: a send that may hold a lower id is unresolved."""
    MISSING = "missing"
    GAVE_UP = "gave_up"


@dataclass(slots=True)
class InDoubt:
    """A send whose outcome is not known yet, and how far its check has got."""

    view: View | PhotoView | QuestionView[InlineKeyboardMarkup]
    step: Send | SendPhoto | SendQuestion[InlineKeyboardMarkup]
    fields: TextFields | QuestionFields
    """The text sent (for a photo: its caption; for a question: its keyboard too)."""
    floor: int
    """The counter's bound when the send began."""
    counter: Counter
    pending: Pending
    """The send, as the counter knows it (in doubt)."""
    candidate: int = field(init=False)
    """The id to probe next (after :attr:`Verdict.ARRIVED`: the message's id)."""
    probes: int = 0
    """Probes answered so far (those that failed in transit are not counted)."""
    fetched: bool = False
    """The updates Telegram held after the doubt arose have been noted."""

    def __post_init__(self) -> None:
        self.candidate = self.floor + 1

    @property
    def chat_id(self) -> int:
        return self.pending.chat_id

    def plan(self) -> Plan:
        """What to do next (moving :attr:`candidate` past the ids known not to be it)."""
        counter, pending = self.counter, self.pending
        stuck = pending.stuck_at
        if stuck is not None and stuck <= counter.bound:
            # Something took an id above this one since: its "not found" was a gap.
            pending.stuck_at = None
            self.candidate = max(self.candidate, stuck + 1)
        while counter.owner(self.candidate) not in {None, self.chat_id}:
            self.candidate += 1  # another chat's message (this chat's are probed)
        if pending.later_id is not None and self.candidate >= pending.later_id:
            return Plan.MISSING  # every id below one given out later is accounted for
        if self.probes >= MAX_PROBES:
            return Plan.GAVE_UP
        if self.candidate <= counter.bound or not counter.shared:
            return Plan.PROBE
        if not self.fetched:
            return Plan.CATCH_UP
        if pending.stuck_at != self.candidate:
            return Plan.PROBE
        blockers = counter.blockers(pending)
        if all(b.doubt_since is not None and b.stuck_at == self.candidate for b in blockers):
            return Plan.MISSING
        return Plan.WAIT

    def caught_up(self, *, fetched: bool) -> None:
        """The updates were fetched (``fetched``), or cannot be (polling has ended)."""
        if fetched:
            self.fetched = True
            self.pending.caught_up = True
        else:
            self.probes = MAX_PROBES  # nothing more can be learnt: the check gives up

    def judge(self, failure: Failure | None) -> Verdict:
        """What the probe of :attr:`candidate` says (``failure`` None: the edit went
        through)."""
        if failure in {Failure.RETRY_AFTER, Failure.NOT_SENT, Failure.MAYBE_SENT}:
            return Verdict.AGAIN
        self.probes += 1
        if failure is None or failure is Failure.NOT_MODIFIED:
            # An edit that went through found a message of the bot's with other text;
            # none can be above the floor in this chat but this one, so it is taken as
            # the message (it now shows exactly the text that was meant).
            return Verdict.ARRIVED
        counter = self.counter
        if failure is Failure.NOT_EDITABLE:
            counter.saw(self.chat_id, self.candidate)  # a user's message, here
            self.candidate += 1
            return Verdict.NEXT
        if failure is Failure.GONE:
            if self.candidate <= counter.bound:
                self.candidate += 1  # a gap: another chat's message, or a deleted one
                return Verdict.NEXT
            if not counter.shared:
                return Verdict.MISSING
            counter.stuck(self.pending, self.candidate)
            return Verdict.NEXT
        # A refusal the identical send would have met as well.
        return Verdict.MISSING
