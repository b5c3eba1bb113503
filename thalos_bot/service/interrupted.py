"""At start-up: the turns a kill cut short are told to their conversations.

What the last process left in the turn journal (:mod:`thalos_bot.storage.turn_journal`)
for the channels just opened was begun and never kept. Each conversation gets one
notice through the outbox, keyed by the journal entry, so a start killed in the middle
of this tells nobody twice; the entry is then forgotten. An entry whose source hands
the message over again (email) is only forgotten: that message is answered anew.
"""

from __future__ import annotations

from collections.abc import Collection

import structlog

from thalos_bot.channels import notices
from thalos_bot.domain.ids import ChannelId
from thalos_bot.service.outbox import Outbox
from thalos_bot.storage.turn_journal import TurnJournal

log = structlog.get_logger(__name__)


async def tell_cut_turns(
    journal: TurnJournal, outbox: Outbox, channels: Collection[ChannelId]
) -> int:
    """Tell every conversation of ``channels`` whose turn was cut; how many were told."""
    told = 0
    for cut in await journal.left(channels):
        if not cut.replayed:
            await outbox.deliver(
                cut.channel_id,
                cut.conversation_id,
                notices.interrupted_by_restart(),
                kind="notice",
                key=f"cut-turn-{cut.id}",
            )
            told += 1
        await journal.end(cut.id)
        log.warning(
            "turn_cut_by_a_kill",
            channel=cut.channel_id,
            conversation=cut.conversation_id,
            told=not cut.replayed,
        )
    return told
