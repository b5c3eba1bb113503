"""The API's conversations on the page's listener: what the daemon delivers to one of
them (an event, an outbox row's final, notice or clip, an approval question) goes to the
request waiting for it, never to the page; the page's own conversations go to the page."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import anyio
import pytest

from tests.web.test_engine_finals import CHAT, Journal, daemon
from thalos_bot.api.openai import OpenAIApi
from thalos_bot.api.sink import ApiSink
from thalos_bot.channels.final import PassingFinals
from thalos_bot.channels.ports import Notice
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.people import People
from thalos_bot.pump.approvals import approver_for
from thalos_bot.storage.api_keys import SqliteApiKeys
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest

pytestmark = pytest.mark.anyio
API_CHAT = ConversationId("api:one")


def _api(sink: ApiSink) -> OpenAIApi:
    """The API as the daemon makes it; its keys and agents are not asked here."""
    none = cast(SqliteApiKeys, None)
    return OpenAIApi(none, cast(AgentCatalog, None), People(), ChannelId("web"), print, sink=sink)


async def test_the_apis_rows_and_questions_go_to_its_request_not_the_page(
    tmp_path: Path,
) -> None:
    sink = ApiSink()
    final, notice, clip = Journal(), Journal(), Journal()
    spoken = VoiceClip(SessionId("s1"), "audio/ogg", b"OggS")
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            served = _api(sink).first(page)
            assert isinstance(served, PassingFinals)
            assert served.passes_final(API_CHAT)
            assert not served.passes_final(CHAT)
            receive = await sink.claim(API_CHAT)
            assert receive is not None
            await served.deliver(API_CHAT, Notice("working"))
            await served.deliver_final(API_CHAT, "The answer.", final, ends_turn=True)
            await served.deliver_notice(API_CHAT, Notice("failed", "warning"), notice)
            await served.deliver_clip(API_CHAT, spoken, clip)
            heard = [receive.receive_nowait() for _ in range(4)]
            await sink.done(API_CHAT, receive)
            receive.close()
            asked = approver_for(served, API_CHAT)
            assert asked is not None
            answer = await asked.ask(
                ApprovalRequest("shell__run", {"command": "ls"}, SessionId("s1"))
            )
            await served.deliver(CHAT, Notice("for the page"))
            await page.relay.written()
            api_events = page.timeline(API_CHAT).events()
            page_events = page.timeline(CHAT).events()
    assert heard == [
        Notice("working"),
        Notice("The answer.", "info"),
        Notice("failed", "warning"),
        spoken,
    ]
    assert [final.confirmed.is_set(), notice.confirmed.is_set(), clip.confirmed.is_set()] == [
        True,
        True,
        True,
    ], "each row confirmed once handed over"
    assert answer == ApprovalAnswer("denied", "nobody to ask over the API")
    assert api_events == [], "nothing of the API's conversation reaches the page"
    assert [(e.kind, e.data["html"]) for e in page_events] == [("notice", "for the page")]
