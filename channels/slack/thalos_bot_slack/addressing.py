"""Where a conversation lives in Slack.

A conversation id is the channel id (``D…``, a direct message answered at its top level)
or ``<channel>/<thread_ts>`` (a thread: a listed channel's mention-started thread, or an
assistant thread of the DM). Replies go to that thread. (``/``, not ``:``, so that a
delivery address ``slack:<conversation>`` parses as one.) A message is known by its
channel and ``ts``; its mark for the kit's catch-up is the ``ts`` in microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.domain.ids import ConversationId


@dataclass(frozen=True, slots=True)
class Place:
    channel: str
    thread_ts: str | None = None

    @classmethod
    def parse(cls, conversation_id: str) -> Place:
        channel, _, thread = conversation_id.partition("/")
        if not channel or not channel[0].isalpha() or "/" in thread or ":" in conversation_id:
            raise ValueError(f"not a Slack conversation id: {conversation_id!r}")
        return cls(channel, thread or None)

    @property
    def conversation_id(self) -> ConversationId:
        thread = "" if self.thread_ts is None else f"/{self.thread_ts}"
        return ConversationId(self.channel + thread)

    @property
    def is_dm(self) -> bool:
        return self.channel.startswith("D")


def ts_mark(ts: str) -> int | None:
    """``"1700000000.000100"`` → ``1700000000000100`` (None: not a ``ts``)."""
    seconds, _, micros = ts.partition(".")
    valid = seconds.isdigit() and micros.isdigit() and len(micros) <= 6
    return int(seconds) * 1_000_000 + int(micros.ljust(6, "0")) if valid else None
