"""The daemon as assembled from bot.toml with named providers, over the Telegram fake, the
Anthropic fake and the OpenAI-compatible fake: Claude answers 529, the local model answers
instead and the chat is told so in one line; another agent on the local server only has
a context window nobody published, and /status says so."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.daemon_config import telegram_daemon_config
from tests.fakes import openai_api as compat
from tests.fakes.anthropic_api import AnthropicFake, overloaded
from tests.fakes.openai_api import OpenAIFake
from tests.fakes.telegram_api import TelegramFake
from tests.provider_pair import providers_toml
from thalos_bot.config.loader import load_settings
from thalos_bot.service.host import open_host

pytestmark = pytest.mark.anyio

USER = 7272
TOKEN = "737373:TEST-named-providers"


async def test_a_529_falls_back_to_the_local_model_and_the_chat_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    with (
        TelegramFake(TOKEN, per_chat_interval=0.05, burst=3) as telegram,
        AnthropicFake() as anthropic,
        OpenAIFake() as local,
    ):
        config = telegram_daemon_config(
            telegram.base_url, USER, sections=providers_toml(anthropic, local)
        )
        (tmp_path / "bot.toml").write_text(config, encoding="utf-8")
        anthropic.enqueue(overloaded())
        local.enqueue(compat.reply(compat.text("Hello ", "from the local model.")))
        local.enqueue(compat.reply(compat.text("Home here.")))
        loaded = load_settings(tmp_path / "bot.toml")
        async with (
            open_host(loaded, channels=["telegram"]) as host,
            anyio.create_task_group() as group,
        ):
            group.start_soon(host.pump.run, host.sources)
            telegram.push_text(USER, USER, "hi")
            assert await telegram.wait_for(
                lambda: "Hello from the local model." in telegram.texts(USER) or None, 20
            )
            telegram.push_text(USER, USER, "/new home")
            telegram.push_text(USER, USER, "and you?")
            assert await telegram.wait_for(lambda: "Home here." in telegram.texts(USER) or None, 20)
            telegram.push_text(USER, USER, "/status")
            assert await telegram.wait_for(
                lambda: any(t.startswith("Agent: Home") for t in telegram.texts(USER)) or None,
                20,
            )
            host.pump.stop()
        texts = telegram.texts(USER)
    assert "[fallback] claude could not answer; qwen3:8b is answering instead." in texts
    (status,) = [t for t in texts if t.startswith("Agent: Home")]
    assert "context window is unknown" in status
    assert len(anthropic.requests) == 1
