"""An update Telegram was told to forget (the next getUpdates offset confirms it) but the
pump never took before a stop or a kill is answered by the next start, once: a photo
still downloading, an album still settling. One the bot refused (a stranger) is not
kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.channels.contract.daemon import PNG, running
from tests.channels.contract.suite import texts
from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import STRANGER, USER
from tests.telegram.test_contract import TelegramContract
from tests.telegram.test_outbox_restart import _kill, _start, _stop, _write_config
from thalos_bot.domain.messages import ImageBlock
from thalos_bot.providers.scripted import Say, ScriptedProvider


@pytest.mark.anyio
async def test_a_photo_downloading_at_a_stop_is_answered_by_the_next_start(
    fake: TelegramFake, tmp_path: Path
) -> None:
    transport = TelegramContract(fake)
    provider = ScriptedProvider([[Say("a chart")], [Say("again?!")]])
    fake.files.served.clear()
    async with running(transport, tmp_path, provider):
        await transport.send_image(PNG, "what is this?")
        await transport.wait_for(lambda: fake.files.asked == 1)
    assert provider.requests == [], "stopped before the pump had it"
    fake.files.served.set()
    async with running(transport, tmp_path, provider):
        await transport.wait_for(lambda: texts(transport.shown()) == ["a chart"])
        await transport.say("/help")
        await transport.wait_for(lambda: len(transport.shown()) == 2)
    assert len(provider.requests) == 1
    assert provider.requests[0].messages[-1].text == "what is this?"
    assert texts(transport.shown())[0] == "a chart"


@pytest.mark.anyio
async def test_an_album_downloading_at_a_stop_is_one_message_after_it(
    fake: TelegramFake, tmp_path: Path
) -> None:
    transport = TelegramContract(fake)
    provider = ScriptedProvider([[Say("two charts")], [Say("again?!")]])
    fake.files.served.clear()
    async with running(transport, tmp_path, provider):
        fake.push_photo(USER, USER, PNG, caption="these", media_group_id="album-1")
        fake.push_photo(USER, USER, PNG, media_group_id="album-1")
        await transport.wait_for(lambda: fake.files.asked >= 1)
    fake.files.served.set()
    async with running(transport, tmp_path, provider):
        await transport.wait_for(lambda: texts(transport.shown()) == ["two charts"])
        await transport.say("/help")
        await transport.wait_for(lambda: len(transport.shown()) == 2)
    assert len(provider.requests) == 1, "one message, and no part of it again"
    last = provider.requests[0].messages[-1]
    assert sum(isinstance(block, ImageBlock) for block in last.content) == 2
    assert _held(tmp_path) == {}, "no part is handed over again at a third start"


@pytest.mark.anyio
async def test_a_strangers_update_is_not_kept_for_the_next_start(
    fake: TelegramFake, tmp_path: Path
) -> None:
    transport = TelegramContract(fake)
    provider = ScriptedProvider([[Say("hello")]])
    async with running(transport, tmp_path, provider):
        fake.push_text(STRANGER, STRANGER, "let me in")
        await transport.say("hi")
        await transport.wait_for(lambda: texts(transport.shown()) == ["hello"])
    assert _held(tmp_path) == {}


def _held(state: Path) -> object:
    return json.loads((state / "telegram-waiting.json").read_text())["waiting"]


@pytest.mark.slow
def test_a_photo_downloading_at_a_kill_is_answered_once_by_the_next_start(
    fake: TelegramFake, tmp_path: Path
) -> None:
    _write_config(tmp_path, fake)
    fake.files.served.clear()
    process = _start(tmp_path, fake)
    try:
        fake.push_photo(USER, USER, PNG, caption="what is this?")
        fake.wait_for_blocking(lambda: fake.files.asked == 1, timeout=60)
    finally:
        _kill(process)
    fake.files.served.set()
    process = _start(tmp_path, fake)
    try:
        fake.wait_for_blocking(lambda: fake.texts(USER), timeout=60)
        fake.push_text(USER, USER, "and this")
        fake.wait_for_blocking(lambda: len(fake.texts(USER)) == 2, timeout=60)
    finally:
        _stop(process)
    assert fake.texts(USER) == ["You said: what is this?", "You said: and this"]
