"""The dashboard over a real daemon (``open_host`` over the Telegram fake and the
scripted model): the sources the daemon hands its channels show the Telegram channel up,
the session a message made, the configured schedule (which the owner pauses), the
built-in tool sources and the memory figures."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.daemon_config import telegram_daemon_config
from tests.dashboard.host import OWNER, check_csrf, csrf_token, principal_of, token_for
from tests.fakes.telegram_api import TelegramFake
from thalos_bot.config.loader import load_settings
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.routes import dashboard_routes
from thalos_bot.service.host import open_host

pytestmark = pytest.mark.anyio

USER = 5353
SCHEDULE = f"""[[schedules]]
id = "morning"
cron = "0 9 * * *"
task = "Say good <b>morning</b>"
deliver_to = "telegram:{USER}"
principal = "owner"
"""


async def test_the_daemon_hands_its_stores_to_the_dashboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "123456:TEST-" + secrets.token_hex(16)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", token)
    with TelegramFake(token, per_chat_interval=0.05, burst=3) as telegram:
        (tmp_path / "bot.toml").write_text(
            telegram_daemon_config(telegram.base_url, USER, sections=SCHEDULE), encoding="utf-8"
        )
        async with (
            open_host(load_settings(tmp_path / "bot.toml"), channels=["telegram"]) as host,
            anyio.create_task_group() as group,
        ):
            group.start_soon(host.pump.run, host.sources)
            telegram.push_text(USER, USER, "hello dashboard")
            assert await telegram.wait_for(lambda: telegram.texts(USER) or None, 20)
            deps = DashboardDeps.over(
                host.dashboard,
                principal_of=principal_of,
                is_owner=lambda principal: principal == OWNER,
                csrf_token=csrf_token,
                check_csrf=check_csrf,
            )
            app = Starlette(routes=[Mount("/dashboard", routes=dashboard_routes(deps))])
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://127.0.0.1",
                cookies={"who": OWNER},
            ) as web:
                channels = (await web.get("/dashboard/")).text
                sessions = (await web.get("/dashboard/sessions")).text
                schedules = (await web.get("/dashboard/schedules")).text
                paused = await web.post(
                    "/dashboard/schedules/morning/pause", data={"csrf_token": token_for(OWNER)}
                )
                tools = (await web.get("/dashboard/tools")).text
                memory = (await web.get("/dashboard/memory")).text
            stored = await host.scheduler.store.get("morning") if host.scheduler else None
            host.pump.stop()
    assert re.search(r"telegram.*<span class=\"up\">up</span>", channels)
    assert sessions.count('class="bar"') == 30
    assert "Live sessions" in sessions
    live = sessions[sessions.index("Live sessions") : sessions.index("Recent sessions")]
    assert re.search(
        r'<td data-label="Agent">assistant</td><td data-label="Owner">owner</td>'
        r'.*<td data-label="Turns">1</td>',
        live,
    )
    assert "Say good &lt;b&gt;morning&lt;/b&gt;" in schedules
    assert "/dashboard/schedules/morning/pause" in schedules
    assert paused.status_code == 303
    assert stored is not None
    assert stored.state == "paused"
    assert (
        '<td data-label="Source"><code>memory</code></td><td data-label="Kind">built in</td>'
        in tools
    )
    assert "<dt>Memories</dt><dd>0</dd>" in memory
    assert "<dt>Recall by meaning</dt><dd>embedded</dd>" in memory
