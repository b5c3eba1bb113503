"""The daemon's host with the Telegram channel (real PTB against the Bot API fake), the
Anthropic provider (real SDK against the strict Messages fake) and the SQLite file."""

from __future__ import annotations

import base64
import io
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from PIL import Image

from tests.daemon_config import anthropic_provider, telegram_daemon_config
from tests.fakes.anthropic_api import AnthropicFake
from tests.fakes.telegram_api import TelegramFake
from thalos_bot.config.loader import load_settings
from thalos_bot.service.host import open_host

USER = 5252


def jpeg(width: int, height: int, colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="JPEG", quality=90)
    return out.getvalue()


def image_of(block: dict[str, Any]) -> Image.Image:
    """The image an API ``image`` block carries."""
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"])))


@dataclass
class Daemon:
    telegram: TelegramFake
    anthropic: AnthropicFake
    database: Path

    async def shown(self, predicate: Callable[[list[str]], bool], timeout: float = 15) -> list[str]:
        """Wait until the chat's bot messages satisfy ``predicate``; return them."""

        def check() -> list[str] | None:
            texts = self.telegram.texts(USER)
            return texts if predicate(texts) else None

        found = await self.telegram.wait_for(check, timeout)
        assert found is not None
        return found

    def last_user_content(self) -> list[dict[str, Any]]:
        body = self.anthropic.requests[-1].body
        content: list[dict[str, Any]] = body["messages"][-1]["content"]
        return content

    def media_rows(self) -> list[tuple[str, int]]:
        with sqlite3.connect(self.database) as conn:
            return list(conn.execute("SELECT hash, size FROM media ORDER BY hash"))


@asynccontextmanager
async def running_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, extra: str = "", telegram: str = ""
) -> AsyncIterator[Daemon]:
    token = "123456:TEST-" + secrets.token_hex(16)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(8))
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", token)
    with (
        TelegramFake(token, per_chat_interval=0.01, burst=10) as fake,
        AnthropicFake() as anthropic,
    ):
        (tmp_path / "bot.toml").write_text(
            telegram_daemon_config(
                fake.base_url,
                USER,
                provider=anthropic_provider(anthropic.base_url),
                flush_interval="0.05s",
                sections='[[agents]]\nid = "assistant"\nname = "Assistant"',
                telegram='streaming = "off"\nchat_min_interval = 0.01\n'
                f"album_settle = 0.3\n{telegram}\n{extra}",
            ),
            encoding="utf-8",
        )
        loaded = load_settings(tmp_path / "bot.toml")
        async with (
            open_host(loaded, channels=["telegram"]) as host,
            anyio.create_task_group() as group,
        ):
            group.start_soon(host.pump.run, host.sources)
            try:
                yield Daemon(fake, anthropic, loaded.database_path)
            finally:
                host.pump.stop()
