"""The poller catches up on request (for the check of a send in doubt): a long poll in
flight is cut short and Telegram asked again at once, and the call returns only once
every update Telegram held has been handed over; after polling ended it peeks, handing
nothing over and confirming nothing."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from telegram import Update

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, make_config
from thalos_bot_telegram.client import build_bot
from thalos_bot_telegram.poller import Poller

pytestmark = pytest.mark.anyio


def texts(updates: Sequence[Update]) -> list[str]:
    return [u.message.text for u in updates if u.message and u.message.text]


async def test_a_long_poll_is_cut_short_and_every_held_update_handed_over(
    fake: TelegramFake,
) -> None:
    config = make_config(fake, poll_timeout=50, request_timeout=2)
    handed: list[str] = []
    async with build_bot(fake.token, config) as bot, anyio.create_task_group() as group:
        poller = Poller(bot, config, lambda updates: handed.extend(texts(updates)))
        group.start_soon(poller.run)
        await poller.receiving.wait()
        await fake.wait_for(lambda: fake.polling)  # a long poll waits at Telegram
        with anyio.fail_after(25):  # well short of the 50 s long poll
            assert await poller.caught_up(), "nothing held: caught up at once"

        def timeouts() -> list[object]:
            """getUpdates' timeouts in the order the calls arrived."""
            calls = sorted(fake.calls("getUpdates"), key=lambda c: c.at)
            return [c.params.get("timeout") for c in calls]

        # The fake logs a call when it ends: the cut long poll ends when Telegram sees
        # the next call, which may be after that call's own answer was logged.
        await fake.wait_for(lambda: 50 in timeouts(), 10)
        assert timeouts()[-2:] == [50, 0], "asked again rather than waiting out the long poll"
        fake.push_text(USER, USER, "held when asked")
        assert await poller.caught_up()
        assert handed == ["held when asked"], "handed over before it returned"
        group.cancel_scope.cancel()


async def test_after_polling_ended_it_peeks_without_handing_over(fake: TelegramFake) -> None:
    config = make_config(fake, poll_timeout=1, request_timeout=2)
    handed: list[str] = []
    peeked: list[str] = []
    async with build_bot(fake.token, config) as bot:
        poller = Poller(bot, config, lambda updates: handed.extend(texts(updates)))
        poller.peeked = lambda updates: peeked.extend(texts(updates))
        async with anyio.create_task_group() as group:
            group.start_soon(poller.run)
            await poller.receiving.wait()
            group.cancel_scope.cancel()
        fake.push_text(USER, USER, "written during shutdown")
        assert await poller.caught_up()
    assert peeked == ["written during shutdown"]
    assert handed == [], "not handed over: the next process gets it"
    assert fake.pending_update_count == 1, "not confirmed either"


async def test_a_peek_does_not_confirm_a_batch_fetched_but_not_handed_over(
    fake: TelegramFake,
) -> None:
    config = make_config(fake, poll_timeout=30, request_timeout=2)
    handed: list[str] = []
    peeked: list[str] = []
    async with build_bot(fake.token, config) as bot:
        poller = Poller(bot, config, lambda updates: handed.extend(texts(updates)))
        poller.peeked = lambda updates: peeked.extend(texts(updates))
        async with anyio.create_task_group() as group:
            group.start_soon(poller.run)
            await poller.receiving.wait()
            await fake.wait_for(lambda: fake.polling)
            fake.stall_next("getUpdates")  # the call that would acknowledge it hangs
            fake.push_text(USER, USER, "fetched, never handed over")
            await fake.wait_for(lambda: [c for c in fake.calls("getUpdates") if c.fault])
            group.cancel_scope.cancel()
        assert await poller.caught_up()
    assert handed == []
    assert peeked == ["fetched, never handed over"]
    assert fake.pending_update_count == 1, "still Telegram's to hand to the next process"


async def test_a_batch_is_shown_before_the_call_that_acknowledges_it(fake: TelegramFake) -> None:
    # So its ids are in the database before Telegram forgets the updates.
    config = make_config(fake, poll_timeout=1, request_timeout=2)
    handed: list[str] = []
    acknowledged_first: list[bool] = []

    async def before_ack(updates: Sequence[Update]) -> None:
        top = max(u.update_id for u in updates)
        acks = [c for c in fake.calls("getUpdates") if int(c.params.get("offset", 0)) > top]
        acknowledged_first.append(bool(acks))

    async with build_bot(fake.token, config) as bot, anyio.create_task_group() as group:
        poller = Poller(bot, config, lambda updates: handed.extend(texts(updates)))
        poller.before_ack = before_ack
        group.start_soon(poller.run)
        fake.push_text(USER, USER, "noted first")
        await fake.wait_for(lambda: handed)
        group.cancel_scope.cancel()
    assert acknowledged_first == [False]
    assert handed == ["noted first"]
