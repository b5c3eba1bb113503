"""The web channel on three replicas on PostgreSQL, with a real Chromium: a code made with
``thalos-bot web pair`` in one replica's folder logs in on another, the login is valid
on every replica, and logging out (the page's button) revokes it everywhere: an event
stream open on a third replica ends, and every replica answers 401 to the cookie.

The signing secret, the logouts and the codes are in the shared store
(:mod:`thalos_bot.cluster.web_logins`)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from playwright.async_api import async_playwright, expect

from tests.channels.cli_process import run_piped
from tests.cluster.daemons import Daemons, running_daemons
from tests.cluster.processes import Replica
from tests.fakes.telegram_api import TelegramFake
from tests.web.conftest import chromium_path

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
CODE = re.compile(r"/login\?code=([A-Z0-9]+)")


@pytest.fixture
async def daemons(fake: TelegramFake, postgres_url: str, tmp_path: Path) -> AsyncIterator[Daemons]:
    async with running_daemons(fake, postgres_url, tmp_path, lease=3.0, web=True) as made:
        yield made


def pair_code(home: Path) -> str:
    made = run_piped(["web", "pair", "--principal", "owner"], "", cwd=home, timeout=60)
    assert made.returncode == 0, made.stderr
    found = CODE.search(made.stdout)
    assert found is not None, made.stdout
    return found.group(1)


async def test_a_login_is_the_whole_bots_and_a_logout_revokes_it_everywhere(
    daemons: Daemons,
) -> None:
    d = daemons
    path = chromium_path()
    if path is None:
        pytest.skip("chromium is not installed")
    homes = [r.home for r in d.replicas if r.home is not None]
    ports = [r.web_port for r in d.replicas]
    code = pair_code(homes[2])  # made in the third replica's folder
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=path)
        try:
            page = await browser.new_page()
            page.set_default_timeout(30_000)
            await page.goto(f"http://127.0.0.1:{ports[0]}/login?code={code}")
            await expect(page.locator("#link")).to_have_text("live")
            served = [
                (await page.request.get(f"http://127.0.0.1:{port}/", max_redirects=0)).status
                for port in ports
            ]
            assert served == [200, 200, 200]
            cookies = {c["name"]: c["value"] for c in await page.context.cookies()}
            async with (
                httpx.AsyncClient(cookies=cookies, timeout=30) as client,
                client.stream("GET", f"http://127.0.0.1:{ports[1]}/api/events") as stream,
            ):
                assert stream.status_code == 200
                await page.locator("#logout").click()
                with anyio.fail_after(30):  # it ends: the replica read the logout
                    async for _ in stream.aiter_bytes():
                        pass
            # Each replica reads the logouts every second: the copied cookie is refused
            # by all of them soon after (a request still reaching one first gets 200).
            async with httpx.AsyncClient(cookies=cookies, timeout=30) as client:
                after = [await refused(client, f"http://127.0.0.1:{port}/") for port in ports]
        finally:
            await browser.close()
    assert after == [401, 401, 401]


async def refused(client: httpx.AsyncClient, url: str) -> int:
    """The status of ``url`` once it is no longer 200 (at most 30 s)."""
    with anyio.fail_after(30):
        while (status := (await client.get(url)).status_code) == 200:
            await anyio.sleep(0.2)
    return status


def streams_opened(replica: Replica) -> list[dict[str, object]]:
    """The ``web_stream_opened`` lines of ``replica``'s log."""
    lines = replica.log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [
        entry
        for entry in (json.loads(line) for line in lines if '"web_stream_opened"' in line)
        if entry.get("event") == "web_stream_opened"
    ]


async def test_an_answer_reaches_the_tab_once_when_its_replica_dies_mid_answer(
    daemons: Daemons,
) -> None:
    """The tab's stream (through HAProxy) is on one replica, the turn runs on another;
    the tab's replica is killed mid-answer, Chromium reconnects through HAProxy to a
    third or to the turn's, naming the last event it saw: the answer ends on the page,
    once, whole, with nothing shown twice."""
    d = daemons
    assert d.web is not None
    path = chromium_path()
    if path is None:
        pytest.skip("chromium is not installed")
    homes = [r.home for r in d.replicas if r.home is not None]
    code = pair_code(homes[1])
    words = " ".join(f"w{n}" for n in range(120))  # echoed a word at a time, 0.03 s each
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=path)
        try:
            page = await browser.new_page()
            page.set_default_timeout(30_000)
            await page.goto(f"{d.web.base}/login?code={code}")
            await expect(page.locator("#link")).to_have_text("live")
            with anyio.fail_after(30):
                while not any(streams_opened(r) for r in d.replicas):
                    await anyio.sleep(0.1)
            tab = next(r for r in d.replicas if streams_opened(r))
            turn = next(r for r in d.replicas if r is not tab)
            csrf = await page.locator('meta[name="csrf-token"]').get_attribute("content")
            cookies = {c["name"]: c["value"] for c in await page.context.cookies()}
            async with httpx.AsyncClient(cookies=cookies, timeout=30) as client:
                sent = await client.post(
                    f"http://127.0.0.1:{turn.web_port}/api/send",
                    data={"text": words},
                    headers={"x-csrf-token": csrf or ""},
                )
            assert sent.status_code == 202, sent.text
            await expect(page.locator(".msg.bot.streaming")).to_contain_text("w5")
            tab.kill()
            final = page.locator(".msg.bot.final")
            await expect(final).to_contain_text("w119")
            bots = await page.locator(".msg.bot").all_inner_texts()
            mine = await page.locator(".msg.me").all_inner_texts()
        finally:
            await browser.close()
    assert [b.strip() for b in bots] == [f"You said: {words}"]
    assert [m.strip() for m in mine] == [words]
    resumed = [e for r in d.replicas if r is not tab for e in streams_opened(r) if e["resumed"]]
    assert resumed  # the browser came back on another replica, naming its last event
