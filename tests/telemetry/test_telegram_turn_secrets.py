"""No secret in any span or log across a full Telegram turn: the daemon's host with the
Telegram channel (real python-telegram-bot against the Bot API fake) and the Anthropic
provider (real SDK against the Messages fake), tracing on with an in-memory exporter."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from tests.daemon_config import anthropic_provider, telegram_daemon_config
from tests.fakes.anthropic_api import AnthropicFake, text_reply, tool_use_reply
from tests.fakes.telegram_api import TelegramFake
from thalos_bot.config.loader import load_settings
from thalos_bot.config.telemetry import TelemetrySettings
from thalos_bot.service.host import open_host
from thalos_bot.telemetry.otel import setup_telemetry

USER = 5151
API_KEY = "sk-ant-api03-" + secrets.token_urlsafe(24)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    settings = TelemetrySettings(tracing=True, metrics=False, exporter="none")
    # Installed globally too, so the Anthropic SDK's own spans are exported (and checked).
    telemetry = setup_telemetry(settings, span_exporter=exporter, install_global=True)
    yield exporter
    telemetry.shutdown()


@pytest.mark.anyio
async def test_no_secret_reaches_a_span_or_a_log(
    tmp_path: Path,
    spans: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = "123456:TEST-" + secrets.token_hex(16)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", token)
    caplog.set_level(logging.DEBUG, logger="thalos_bot")
    with (
        TelegramFake(token, per_chat_interval=0.05, burst=3) as telegram,
        AnthropicFake() as anthropic,
    ):
        (tmp_path / "bot.toml").write_text(
            telegram_daemon_config(
                telegram.base_url,
                USER,
                provider=anthropic_provider(anthropic.base_url),
                sections='[telemetry]\ntracing = true\nexporter = "none"\n'
                '[[agents]]\nid = "assistant"\nname = "Assistant"\nskills = ["*"]',
            ),
            encoding="utf-8",
        )
        anthropic.enqueue(tool_use_reply("memory__remember", {"text": "likes tea"}))
        anthropic.enqueue(text_reply("Noted", ": you like tea."))
        loaded = load_settings(tmp_path / "bot.toml")
        with capture_logs() as logs:
            async with (
                open_host(loaded, channels=["telegram"]) as host,
                anyio.create_task_group() as group,
            ):
                group.start_soon(host.pump.run, host.sources)
                telegram.push_text(USER, USER, "remember that I like tea")
                done = await telegram.wait_for(
                    lambda: "Noted: you like tea." in telegram.texts(USER) or None, 20
                )
                host.pump.stop()
        assert done
        authorization = [r.headers.get("authorization", "") for r in anthropic.requests]
        assert all(API_KEY in value for value in authorization), "the SDK did send the key"
    finished = spans.get_finished_spans()
    names = {span.name for span in finished}
    assert {"invoke_agent assistant", "chat claude-sonnet-5-5", "deliver telegram"} <= names
    assert "execute_tool memory__remember" in names
    everything = "\n".join(span.to_json() for span in finished)
    everything += json.dumps(logs, default=str)
    everything += "\n".join(record.getMessage() for record in caplog.records)
    for secret in (token, token.split(":")[1], API_KEY):
        assert secret not in everything
    assert "Bearer " not in everything
