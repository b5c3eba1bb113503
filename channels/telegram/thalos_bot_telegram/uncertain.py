"""Finding out whether a sendMessage in doubt arrived, before sending it again.

After a timeout, a dropped connection or a 5xx answer, Telegram may or may not have
posted the message. Sending it again could show it twice; not sending it could lose it.
So the sender checks, relying on two facts about a private chat:

* message ids are sequential per chat and shared by both sides (the user's messages and
  the bot's draw from one counter), so the message, if it arrived, has an id above the
  *floor*: the highest id known in the chat when it was sent;
* ``editMessageText`` with exactly the text (and parse mode) that was sent answers
  "message is not modified" on that very message and changes nothing, "message can't be
  edited" on a message of the user's, and "message to edit not found" on an id that no
  message has.

So the ids above the floor are probed in turn with the identical text: "not modified"
means it arrived (its id is adopted, nothing is sent again); "can't be edited" is a
message the user wrote meanwhile (the next id is probed); "not found" means it did not
arrive, and only then is it sent again. A probe that fails in transit (or meets a 429)
is made again, after the wait. Probing is bounded by :data:`MAX_PROBES`.

Nothing else goes to the chat while a send is in doubt, so no other message of the
bot's can sit above the floor for a probe to rewrite.

In a group the ids are shared by every member, and the bot does not see every message
(privacy mode), so the floor may lag. The check stays sound: it only probes ids above
the floor, where a member's message answers "can't be edited" just as the user's does
(the next id is probed), and one of the bot's own can only be the send in doubt (all
topics of a chat share one sender). A busy group may use up :data:`MAX_PROBES`; then
the message is sent again, as when no id is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import NotRequired, TypedDict

from telegram import InlineKeyboardMarkup

from thalos_bot_telegram.errors import Failure
from thalos_bot_telegram.photos import PhotoView, SendPhoto
from thalos_bot_telegram.questions import QuestionView, SendQuestion
from thalos_bot_telegram.render import Send, View

MAX_PROBES = 20
"""Ids probed for one send before giving up and sending it again (each of the user's
messages written while the send was in doubt costs one)."""


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
    """No message has the probed id: the send did not arrive."""
    NEXT = "next"
    """The probed id is the user's message: the next id is probed."""
    AGAIN = "again"
    """The probe itself failed in transit or met flood control: it is made again."""
    GAVE_UP = "gave_up"
    """:data:`MAX_PROBES` ids were the user's: the check is abandoned."""


@dataclass(slots=True)
class InDoubt:
    """A send whose outcome is not known yet, and how far its check has got."""

    view: View | PhotoView | QuestionView
    step: Send | SendPhoto | SendQuestion
    fields: TextFields | QuestionFields
    """The text sent (for a photo: its caption; for a question: its keyboard too)."""
    floor: int
    """The highest message id known in the chat when the send was made."""
    candidate: int = field(init=False)
    """The id to probe next (after :attr:`Verdict.ARRIVED`: the message's id)."""
    probes: int = 0
    """Probes answered so far (those that failed in transit are not counted)."""

    def __post_init__(self) -> None:
        self.candidate = self.floor + 1

    def judge(self, failure: Failure | None) -> Verdict:
        """What the probe of :attr:`candidate` says (``failure`` None: the edit went
        through), moving on to the next id where the answer says to."""
        if failure in {Failure.RETRY_AFTER, Failure.NOT_SENT, Failure.MAYBE_SENT}:
            return Verdict.AGAIN
        self.probes += 1
        if failure is None or failure is Failure.NOT_MODIFIED:
            # An edit that went through found a message of the bot's with other text;
            # none can be above the floor but this one, so it is taken as the message
            # (it now shows exactly the text that was meant).
            return Verdict.ARRIVED
        if failure is Failure.NOT_EDITABLE:
            if self.probes >= MAX_PROBES:
                return Verdict.GAVE_UP
            self.candidate += 1
            return Verdict.NEXT
        # "not found", or a refusal the identical send would have met as well.
        return Verdict.MISSING
