"""An album whose parts Telegram delivers to three different replicas (in-process
webhook replicas on one PostgreSQL, the fake's webhook routed to a new replica before
each part) is assembled by the chat's lease holder into one turn with every photo."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from tests.cluster.replicas import listen_port, replica
from tests.fakes.telegram_api import TelegramFake
from tests.media.host import jpeg
from tests.telegram.harness import USER, Bot
from thalos_bot.domain.messages import ImageBlock, TextBlock

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
COLOURS = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]


async def answered_200(fake: TelegramFake, update: int) -> None:
    await fake.wait_for(lambda: fake.webhooks.answered(update) == [200], 20)


async def test_an_albums_parts_on_three_replicas_are_one_turn_with_every_photo(
    fake: TelegramFake, postgres_url: str, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        bots: list[Bot] = [
            await stack.enter_async_context(
                replica(fake, postgres_url, tmp_path=tmp_path / f"r{i}", album_settle=2.0)
            )
            for i in range(3)
        ]
        for index, (bot, colour) in enumerate(zip(bots, COLOURS, strict=True)):
            fake.webhooks.route(f"http://127.0.0.1:{listen_port(bot)}")
            part = fake.push_photo(
                USER,
                USER,
                jpeg(64, 48, colour),
                caption="which is greenest?" if index == 0 else None,
                media_group_id="album-1",
            )
            await answered_200(fake, part)
        await fake.wait_for(lambda: any("greenest" in t for t in fake.texts(USER)), 30)
        requests = [r for bot in bots for r in bot.provider.requests]
    answered = [t for t in fake.texts(USER) if "greenest" in t]
    assert len(requests) == 1, "one turn for the whole album, wherever its parts landed"
    assert len(answered) == 1
    content = requests[0].messages[-1].content
    assert [type(b) for b in content] == [ImageBlock, ImageBlock, ImageBlock, TextBlock]
