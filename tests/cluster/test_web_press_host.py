"""The web page's approval presses as the daemon wires them on replicas: two hosts on one
PostgreSQL schema, each serving the page (two replicas, in one process). A question is
asked on one; a login that may not answer presses on the other's page, then the owner
does: the presses go through the host's relay (``approval_presses``, as every channel's),
and the owner's decides."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from tests.cluster.test_web_events import guest_then_owner
from tests.ports import free_port
from thalos_bot.config.loader import load_settings
from thalos_bot.domain.ids import ConversationId
from thalos_bot.service.host import Host, open_host
from thalos_bot.tools.approval import ApprovalAnswer
from thalos_bot_web.adapter import WebAdapter

pytestmark = pytest.mark.anyio
OWNER = ConversationId("owner")


def _config(url: str) -> str:
    return f"""
state_dir = "state"
[provider]
kind = "scripted"
[storage]
url = "{url}"
[memory.embeddings]
mode = "off"
[channels.console]
enabled = false
[channels.web]
enabled = true
listen = "127.0.0.1:{free_port()}"
principals = ["owner", "guest"]
"""


def _page(host: Host) -> WebAdapter:
    [adapter] = [pair.adapter for pair in host.channels if isinstance(pair.adapter, WebAdapter)]
    return adapter


async def test_a_press_on_another_replicas_page_decides_after_a_refused_one(
    tmp_path: Path, postgres_url: str
) -> None:
    hosts: list[Host] = []
    async with AsyncExitStack() as stack:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            path = tmp_path / name / "bot.toml"
            path.write_text(_config(postgres_url), encoding="utf-8")
            hosts.append(
                await stack.enter_async_context(open_host(load_settings(path), channels=["web"]))
            )
        a, b = (_page(host) for host in hosts)
        assert b.asking.presses is not None, "the host relays the page's presses"
        answers = await guest_then_owner(a, b)
        assert answers == [ApprovalAnswer("denied", "web:owner")]
