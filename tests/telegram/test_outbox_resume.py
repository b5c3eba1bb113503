"""An outbox row's delivery, taken up by a new adapter where an earlier one left it: the
parts already shown are not sent again, and a part left in doubt is checked first."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, running_bot
from thalos_bot.channels.final import ConfirmingAdapter
from thalos_bot.domain.ids import ConversationId

pytestmark = pytest.mark.anyio

FIRST, SECOND = "First part. " * 250, "Second part. " * 250
LONG = f"{FIRST.strip()}\n\n{SECOND.strip()}"  # two messages: over 4096 characters
CHAT = ConversationId(str(USER))


@dataclass
class Journal:
    """An outbox row held in memory, as a restarted daemon reads it back."""

    saved: dict[str, object] = field(default_factory=dict)
    confirmed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def progress(self) -> Mapping[str, object]:
        return self.saved

    async def save(self, progress: Mapping[str, object]) -> None:
        self.saved = dict(progress)

    async def confirm(self) -> None:
        self.confirmed.set()

    async def refuse(self) -> None:
        raise AssertionError("refused")


async def _deliver(fake: TelegramFake, journal: Journal, *, until_second_send: bool) -> None:
    # A short cap: the first process gives the hung call no time (it is the restart that
    # settles it here; a drain otherwise waits for a call in flight up to its cap).
    async with running_bot(
        fake, streaming="off", request_timeout=5, drain_timeout=0.2, drain_max=0.3
    ) as bot:
        adapter = bot.pair.adapter
        assert isinstance(adapter, ConfirmingAdapter)
        await adapter.deliver_final(CHAT, LONG, journal, ends_turn=False)
        if until_second_send:
            await fake.wait_for(lambda: fake.calls("sendMessage", chat_id=USER)[1:], 10)
        else:
            with anyio.fail_after(10):
                await journal.confirmed.wait()


async def test_a_part_in_doubt_is_checked_and_shown_parts_are_skipped(
    fake: TelegramFake,
) -> None:
    fake.add_chat(USER)
    fake.spare_next("sendMessage")
    fake.stall_next("sendMessage")  # the second part hangs, never applied
    journal = Journal()
    await _deliver(fake, journal, until_second_send=True)  # the first process ends there
    assert not journal.confirmed.is_set()
    assert journal.saved["parts_done"] == 1
    assert isinstance(journal.saved["floor"], int)
    assert fake.texts(USER) == [FIRST.strip()]

    await _deliver(fake, journal, until_second_send=False)  # a new one takes it up

    assert journal.confirmed.is_set()
    assert fake.texts(USER) == [FIRST.strip(), SECOND.strip()]
    sends = [c.params["text"] for c in fake.calls("sendMessage", chat_id=USER)]
    assert sends == [FIRST.strip(), SECOND.strip(), SECOND.strip()]  # hung, then again
    (probe,) = fake.calls("editMessageText", chat_id=USER)
    assert probe.params["text"] == SECOND.strip()
    assert probe.status == 400  # not found: it had not arrived, so it was sent again
