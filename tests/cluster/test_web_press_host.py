"""The web page's approval presses as the daemon wires them on replicas: two hosts on one
PostgreSQL schema, each serving the page (two replicas, in one process). A question is
asked on one; a login that may not answer presses on the other's page, then the owner
does: the presses go through the host's relay (``approval_presses``, as every channel's),
and the owner's decides."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest

from tests.web.harness import free_port
from thalos_bot.channels.approvals.asking import RELAYED
from thalos_bot.config.loader import load_settings
from thalos_bot.domain.ids import ConversationId, SessionId
from thalos_bot.service.host import Host, open_host
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
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
        request = ApprovalRequest("memory__remember", {"text": "tea"}, SessionId("s"), "owner")
        answers: list[ApprovalAnswer] = []

        async def ask() -> None:
            answers.append(await a.ask_approval(OWNER, request))

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            with anyio.fail_after(10):
                while not a.asking.open_tokens():
                    await anyio.sleep(0.02)
            [key] = a.asking.open_tokens()
            guest = b.asking.answer(key, OWNER, key, "approved", user="guest", who="guest")
            owner = b.asking.answer(key, OWNER, key, "denied", user="owner", who="owner")
            assert guest == owner == RELAYED
            with anyio.fail_after(20):
                while not answers:
                    await anyio.sleep(0.02)
        assert answers == [ApprovalAnswer("denied", "web:owner")]
