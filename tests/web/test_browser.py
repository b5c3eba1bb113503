"""The chat page in a real Chromium against ``thalos-bot run`` on the Anthropic fake."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from PIL import Image
from playwright.sync_api import Browser, Dialog, Page, Request, ViewportSize, expect

from tests.fakes.anthropic_api import (
    AnthropicFake,
    hang_mid_stream,
    text_reply,
    tool_use_reply,
)
from tests.web.harness import WebDaemon, web_daemon

pytestmark = pytest.mark.slow

PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 800}


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=PHONE)
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    yield opened
    context.close()


def log_in(page: Page, daemon: WebDaemon, principal: str, *, command: bool = False) -> None:
    link, _ = daemon.pair_link(principal, command=command)
    page.goto(link)
    expect(page.locator("#link")).to_have_text("live")


def send(page: Page, text: str) -> None:
    page.fill("#text", text)
    page.press("#text", "Enter")


def answers(page: Page) -> list[str]:
    return [t.strip() for t in page.locator(".msg.bot").all_inner_texts()]


def test_pair_log_in_send_and_watch_it_stream(
    page: Page, daemon: WebDaemon, fake: AnthropicFake, artifacts: Path
) -> None:
    log_in(page, daemon, "p10", command=True)  # the link `thalos-bot web pair` prints
    assert page.context.cookies()[0]["httpOnly"] is True
    chunks = ["Here is **a list**:\n\n", "- first\n", "- second\n", "- third\n\n", "Done."]
    fake.enqueue(text_reply(*chunks, chunk_delay=0.4))
    send(page, "make a list")
    # Part of the answer shows while the rest is still being written.
    streaming = page.locator(".msg.bot.streaming")
    expect(streaming).to_contain_text("a list")
    expect(page.locator("#stop")).to_be_visible()
    final = page.locator(".msg.bot.final")
    expect(final).to_contain_text("Done.")
    assert final.locator("strong").inner_text() == "a list"
    assert final.locator("li").all_inner_texts() == ["first", "second", "third"]
    expect(page.locator("#stop")).to_be_hidden()
    page.screenshot(path=str(artifacts / "chat-390.png"), full_page=True)
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(artifacts / "chat-1280.png"), full_page=True)
    # The composer fits the phone's width: nothing sticks out sideways.
    page.set_viewport_size(PHONE)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]


def test_stop_cancels_the_answer(page: Page, daemon: WebDaemon, fake: AnthropicFake) -> None:
    log_in(page, daemon, "p11")
    fake.enqueue(hang_mid_stream("I will go on and on"))
    send(page, "talk forever")
    expect(page.locator(".msg.bot.streaming")).to_contain_text("go on and on")
    page.click("#stop")
    # The answer so far, ending with what cut it, in its own bubble.
    cut = page.locator(".msg.bot.final.failed")
    expect(cut).to_contain_text("[cancelled]")
    expect(page.locator("#stop")).to_be_hidden()
    expect(cut).to_contain_text("I will go on and on")


def test_a_reload_mid_answer_shows_the_partial_then_the_rest(
    page: Page, daemon: WebDaemon, fake: AnthropicFake
) -> None:
    log_in(page, daemon, "p12")
    words = [f"w{n} " for n in range(12)]
    fake.enqueue(text_reply(*words, chunk_delay=0.3))
    send(page, "slowly")
    expect(page.locator(".msg.bot.streaming")).to_contain_text("w2")
    page.reload()
    # After the reload: the answer so far at once, then the rest, and one final.
    expect(page.locator(".msg.bot")).to_contain_text("w2")
    expect(page.locator(".msg.bot.final")).to_contain_text("w11")
    assert answers(page) == ["".join(words).strip()]
    assert page.locator(".msg.me").all_inner_texts() == ["slowly"]


def test_two_tabs_see_one_conversation(page: Page, daemon: WebDaemon, fake: AnthropicFake) -> None:
    log_in(page, daemon, "p13")
    other = page.context.new_page()
    other.goto(daemon.url)
    expect(other.locator("#link")).to_have_text("live")
    fake.enqueue(text_reply("seen by both"))
    send(page, "hello tabs")
    expect(other.locator(".msg.bot.final")).to_contain_text("seen by both")
    expect(other.locator(".msg.me")).to_have_text("hello tabs")
    # /new from the other tab works like everywhere else.
    other.click("[data-command='/new']")
    expect(page.locator(".notice").last).to_contain_text("new session", ignore_case=True)


def test_approve_from_a_button(
    page: Page, daemon: WebDaemon, fake: AnthropicFake, artifacts: Path
) -> None:
    log_in(page, daemon, "p14")
    fake.enqueue(tool_use_reply("memory__remember", {"text": "Likes green tea"}))
    fake.enqueue(text_reply("Noted."))
    send(page, "remember that I like green tea")
    question = page.locator(".approval")
    expect(question).to_contain_text("memory__remember")
    expect(question).to_contain_text("Likes green tea")
    page.screenshot(path=str(artifacts / "approval-390.png"))
    question.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".msg.bot.final")).to_contain_text("Noted.")
    expect(question.locator(".verdict")).to_have_text("✅ Approved by p14.")
    expect(question.locator("button")).to_have_count(0)
    tool_result = fake.requests[-1].body["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result.get("is_error") is not True


def test_deny_from_a_button(page: Page, daemon: WebDaemon, fake: AnthropicFake) -> None:
    log_in(page, daemon, "p20")
    fake.enqueue(tool_use_reply("memory__remember", {"text": "My PIN is 1234"}))
    fake.enqueue(text_reply("I will not keep that."))
    send(page, "remember my PIN")
    question = page.locator(".approval")
    question.get_by_role("button", name="Deny").click()
    expect(page.locator(".msg.bot.final")).to_contain_text("I will not keep that.")
    expect(question.locator(".verdict")).to_have_text("⛔ Denied by p20.")
    tool_result = fake.requests[-1].body["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result["is_error"] is True


def test_upload_a_photo(page: Page, daemon: WebDaemon, fake: AnthropicFake, tmp_path: Path) -> None:
    log_in(page, daemon, "p15")
    photo = tmp_path / "cat.png"
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 120, 40)).save(buffer, format="PNG")
    photo.write_bytes(buffer.getvalue())
    fake.enqueue(text_reply("An orange square."))
    page.set_input_files("#picker", str(photo))
    expect(page.locator("#files li")).to_contain_text("cat.png")
    send(page, "what is this?")
    expect(page.locator(".msg.bot.final")).to_contain_text("An orange square.")
    expect(page.locator("#files li")).to_have_count(0)
    expect(page.locator(".msg.me .file")).to_have_text("cat.png")
    content = fake.requests[-1].body["messages"][-1]["content"]
    kinds = [block["type"] for block in content]
    assert "image" in kinds
    assert any(b.get("text") == "what is this?" for b in content if b["type"] == "text")


def test_a_file_the_model_cannot_read_gets_the_notice(
    page: Page, daemon: WebDaemon, tmp_path: Path
) -> None:
    log_in(page, daemon, "p16")
    archive = tmp_path / "backup.zip"
    archive.write_bytes(b"PK\x03\x04" + bytes(100))
    page.set_input_files("#picker", str(archive))
    send(page, "unpack this")
    expect(page.locator(".notice.warning")).to_contain_text("backup.zip")
    assert answers(page) == []


class _Beacon(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Beacon.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def beacon() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Beacon)
    _Beacon.hits = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_markup_in_an_answer_runs_nothing(
    page: Page, daemon: WebDaemon, fake: AnthropicFake, beacon: str
) -> None:
    log_in(page, daemon, "p17")
    dialogs: list[str] = []
    requests: list[str] = []

    def opened(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    def left(request: Request) -> None:
        requests.append(request.url)

    page.on("dialog", opened)
    page.on("request", left)
    hostile = (
        "Look: <script>alert('script')</script>\n\n"
        "[click me](javascript:alert('link')) and "
        '<a href="javascript:alert(2)">raw link</a>\n\n'
        f'<img src="{beacon}/img" onerror="alert(\'onerror\')">\n\n'
        f"![tracker]({beacon}/markdown-image.png)\n\n"
        "<svg onload=\"alert('svg')\"></svg>\n\n"
        '<iframe src="javascript:alert(3)"></iframe>\n\n'
        "[ok link](https://example.org) END"
    )
    fake.enqueue(text_reply(hostile[:60], hostile[60:]))
    send(page, "be nasty")
    final = page.locator(".msg.bot.final")
    expect(final).to_contain_text("END")
    for link in final.locator("a").all():
        assert link.get_attribute("href") == "https://example.org"
    assert final.locator("script, img, svg, iframe, [onerror], [onload]").count() == 0
    page.get_by_text("click me").click()  # plain text now: clicking it does nothing
    page.wait_for_timeout(0)  # let any queued task run
    assert dialogs == []
    assert _Beacon.hits == []
    sent = {url.split("?")[0] for url in requests}
    assert all(url.startswith(daemon.url) for url in sent), sent


def test_the_dashboard_behind_the_same_login_shows_the_plot(
    page: Page, daemon: WebDaemon, fake: AnthropicFake, artifacts: Path
) -> None:
    log_in(page, daemon, "p18")
    fake.enqueue(text_reply("spent a little"))
    send(page, "cost me something")
    expect(page.locator(".msg.bot.final")).to_contain_text("spent a little")
    page.click("text=Dashboard")
    expect(page.locator("body")).to_contain_text("web")
    page.goto(f"{daemon.url}/dashboard/sessions")
    plot = page.locator("svg").first
    expect(plot).to_be_visible()
    assert plot.locator("rect").count() > 0
    page.screenshot(path=str(artifacts / "dashboard-390.png"), full_page=True)
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(artifacts / "dashboard-1280.png"), full_page=True)


def test_a_tool_image_shows_inline(page: Page, daemon: WebDaemon, fake: AnthropicFake) -> None:
    log_in(page, daemon, "p19")
    fake.enqueue(tool_use_reply("calc__picture", {}))
    fake.enqueue(text_reply("Here it is."))
    send(page, "draw me something")
    expect(page.locator(".msg.bot.final")).to_contain_text("Here it is.")
    figure = page.locator("figure.image")
    expect(figure.locator("figcaption")).to_contain_text("Image from calc__picture")
    image = figure.locator("img")
    expect(image).to_be_visible()
    # Waited for from the test's side: a string predicate (page.wait_for_function) is
    # eval'd in the page, and the page's CSP (no 'unsafe-eval') refuses it.
    expect(image).to_have_js_property("complete", value=True)
    assert image.evaluate("img => img.naturalWidth") > 0, "the image loaded, with the cookie"
    source = image.get_attribute("src")
    assert source is not None
    assert source.startswith("/media/")
    # Without the login it is not there for anyone else.
    assert daemon.client().get(source).status_code == 401


def _gap(page: Page) -> int:
    """How far the newest message is below what the page shows, in pixels."""
    gap: int = page.evaluate(
        "(() => { const l = document.getElementById('log');"
        " return Math.round(l.scrollHeight - l.scrollTop - l.clientHeight); })()"
    )
    return gap


def test_the_page_follows_the_conversation_after_commands(
    page: Page, daemon: WebDaemon, fake: AnthropicFake
) -> None:
    # Issue 38, finding 2: after /help, /status or /agents every new message landed
    # further below the fold (0 → 217 → 323 → 602 → 708 px).
    log_in(page, daemon, "p21")
    for number, command in enumerate(["/help", "/status", "/agents", "/help"]):
        send(page, command)
        expect(page.locator(".notice")).to_have_count(number + 1)
        fake.enqueue(text_reply(f"answer {number}"))
        send(page, f"question {number}")
        expect(page.locator(".msg.bot.final").nth(number)).to_contain_text(f"answer {number}")
        page.wait_for_timeout(100)  # a frame for the layout (the scroll is synchronous)
        assert _gap(page) <= 2, f"after {command}: the newest message is {_gap(page)} px below"
    # Scrolled up on purpose, the page stays where the person put it, and offers a way
    # back to the newest message.
    page.evaluate("document.getElementById('log').scrollTop = 0")
    fake.enqueue(text_reply("while you read"))
    send(page, "one more")
    expect(page.locator(".msg.bot.final").nth(4)).to_contain_text("while you read")
    assert _gap(page) > 100
    latest = page.locator("#latest")
    expect(latest).to_be_visible()
    latest.click()
    expect(latest).to_be_hidden()
    assert _gap(page) <= 2
    # Opened again, the page shows the end of the history, not its middle.
    page.reload()
    expect(page.locator("#link")).to_have_text("live")
    expect(page.locator(".msg.bot.final")).to_have_count(5)
    page.wait_for_timeout(100)
    assert _gap(page) <= 2


def test_a_page_a_person_would_choose(
    browser: Browser, daemon: WebDaemon, fake: AnthropicFake, artifacts: Path
) -> None:
    # Issue 38: a first screen that greets and names the agent, the agent picker, code
    # with highlighting and a copy button, quotes, timestamps, the dashboard both ways;
    # at 390 and 1280 px, light and dark.
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport=PHONE, color_scheme=scheme)
        page = context.new_page()
        page.set_default_timeout(30_000)
        # owners (the dashboard is theirs) no other test logs in as: a fresh first screen
        principal = "p25" if scheme == "light" else "p26"
        log_in(page, daemon, principal)
        hello = page.locator("#hello")
        expect(hello).to_be_visible()
        expect(hello).to_contain_text("You are talking to")
        names = page.locator("#agent option").all_inner_texts()
        assert len(names) >= 2, names
        fake.enqueue(
            text_reply(
                "> a quote\n\nThe code:\n\n```python\ndef add(a, b):\n"
                '    return a + b  # sum\nprint("hi", 42)\n```\n'
            )
        )
        send(page, "show me code")
        answer = page.locator(".msg.bot.final").last
        expect(answer).to_contain_text("return a + b")
        expect(hello).to_be_hidden()
        assert answer.locator("blockquote").inner_text().strip() == "a quote"
        kinds = set(answer.locator("pre code span").evaluate_all("s => s.map(x => x.className)"))
        assert {"tok-k", "tok-s", "tok-n", "tok-c"} <= kinds, kinds
        expect(answer.locator("pre button.copy")).to_have_text("Copy")
        assert answer.locator("pre code").inner_text().startswith("def add(a, b):")
        assert answer.get_attribute("data-time"), "a timestamp"
        page.screenshot(path=str(artifacts / f"page-{scheme}-390.png"), full_page=True)
        page.set_viewport_size(DESKTOP)
        page.screenshot(path=str(artifacts / f"page-{scheme}-1280.png"), full_page=True)
        # The picker starts a new conversation with the agent chosen.
        page.select_option("#agent", index=1)
        expect(page.locator(".notice").last).to_contain_text(names[1])
        # The dashboard and the chat link to each other.
        page.click("header nav a[href='/dashboard/']")
        page.click("nav a.chat")
        expect(page.locator("#link")).to_have_text("live")
        context.close()


def test_voice_on_plays_the_answer_read_aloud(
    page: Page, fake: AnthropicFake, tmp_path: Path
) -> None:
    """``[speech]`` on (the local engine, for real): after ``/voice on`` the answer comes
    as text and as an audio player whose clip the browser loads, with the login."""
    with web_daemon(tmp_path, fake.base_url, "[speech]\nenabled = true\n") as voiced:
        log_in(page, voiced, "p2")
        send(page, "/voice on")
        expect(page.locator(".notice").last).to_contain_text("Spoken answers here: on.")
        fake.enqueue(text_reply("It is noon."))
        send(page, "what time is it?")
        expect(page.locator(".msg.bot.final")).to_contain_text("It is noon.")
        figure = page.locator("figure.audio")
        expect(figure.locator("figcaption")).to_contain_text("The answer, read aloud")
        player = figure.locator("audio")
        source = player.get_attribute("src")
        assert source is not None
        assert source.startswith("/media/")
        # The browser loads it (its length known once the metadata is in).
        expect(player).to_have_js_property("readyState", value=4)
        assert player.evaluate("a => a.duration") > 0.3
        assert voiced.client().get(source).status_code == 401  # not without the login
