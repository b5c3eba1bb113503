"""The API while the daemon stops: a request waiting for its answer, and one that comes
then, are answered 503 with Retry-After (an OpenAI client retries it by itself), not
left to the listener's forced stop (a bare 500)."""

from __future__ import annotations

import anyio
import pytest

from thalos_bot.api.openai import RESTARTING, _restarting
from thalos_bot.api.sink import ApiSink
from thalos_bot.channels import notices
from thalos_bot.channels.ports import Notice

pytestmark = pytest.mark.anyio


async def test_a_waiting_request_hears_the_stop_and_new_ones_are_refused() -> None:
    sink = ApiSink()
    receive = await sink.claim("api:one")
    assert receive is not None
    sink.close()
    with anyio.fail_after(5):
        heard = await receive.receive()
    assert heard == Notice(notices.shutting_down(), "warning")
    assert sink.closed
    await sink.done("api:one", receive)
    receive.close()


def test_the_answer_says_come_back() -> None:
    answer = _restarting()
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert RESTARTING.encode() in answer.body
