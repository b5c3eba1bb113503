"""The interactive terminal under a pty: Markdown rendered, the prompt live while an
answer is written, commands answered at once, other lines told to wait."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped, screen_lines, start_chat
from tests.fakes.anthropic_api import AnthropicFake, hang_mid_stream, text_reply
from thalos_bot.console.blocks import split_blocks
from thalos_bot.console.terminal import plain_autolinks

pytestmark = pytest.mark.slow

KEY = {"ANTHROPIC_API_KEY": "sk-ant-test-key"}
MARKDOWN = "Here is **bold** text.\n\n- first item\n- second item\n\n```python\nprint('hi')\n```\n"


@pytest.fixture
def anthropic() -> Iterator[AnthropicFake]:
    with AnthropicFake() as fake:
        yield fake


def configure(tmp_path: Path, fake: AnthropicFake, flush: str = "0.1s") -> None:
    (tmp_path / "bot.toml").write_text(
        f'state_dir = "state"\n[provider]\nbase_url = "{fake.base_url}"\nmax_retries = 0\n'
        f'[pump]\nflush_interval = "{flush}"\n',
        encoding="utf-8",
    )


def start(tmp_path: Path) -> PtySession:
    return start_chat(tmp_path, KEY)


def test_markdown_is_rendered_in_a_terminal(tmp_path: Path, anthropic: AnthropicFake) -> None:
    anthropic.enqueue(text_reply(*MARKDOWN.split(" ")[:3], " " + " ".join(MARKDOWN.split(" ")[3:])))
    configure(tmp_path, anthropic)
    session = start(tmp_path)
    try:
        session.send("show me markdown\r")
        session.read_until(lambda out: "print" in out and "›" in out.split("print")[-1])
        session.send_eof()
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    raw = session.output
    assert "\x1b[1mbold\x1b[0m" in raw, "bold is shown as bold"
    assert "• first item" in session.visible, "the list is drawn with bullets"
    assert "```" not in session.visible.split("second item")[-1], "the fence is not shown"


def test_piped_output_stays_plain_markdown(tmp_path: Path, anthropic: AnthropicFake) -> None:
    anthropic.enqueue(text_reply(MARKDOWN))
    configure(tmp_path, anthropic)
    result = run_piped(["chat"], "show me markdown\n", cwd=tmp_path, env=KEY)
    assert result.returncode == 0, result.stderr
    assert result.stdout == MARKDOWN


def test_commands_run_and_typing_shows_while_an_answer_is_written(
    tmp_path: Path, anthropic: AnthropicFake
) -> None:
    anthropic.enqueue(hang_mid_stream("Thinking about it"))
    configure(tmp_path, anthropic)
    session = start(tmp_path)
    try:
        session.send("a hard question\r")
        session.read_until(lambda out: "Thinking about it" in out)
        session.send("typed while busy")
        session.read_until(lambda out: "typed while busy" in out.split("Thinking about it")[-1])
        session.send("\r")
        session.read_until(lambda out: "Still working on your previous message" in out)
        session.send("/status\r")
        session.read_until(lambda out: "Turns:" in out.split("Still working")[-1])
        session.send("/help\r")
        session.read_until(lambda out: "/cancel — stop the answer being written" in out)
        session.send("/cancel\r")
        session.read_until(lambda out: "[cancelled]" in out)
        session.read_until(lambda out: "›" in out.split("[cancelled]")[-1])
        session.send_eof()
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    assert len(anthropic.requests) == 1, "the line typed while busy never reached the model"


def test_the_terminal_streams_at_its_own_pace_not_the_pumps(
    tmp_path: Path, anthropic: AnthropicFake
) -> None:
    """The pump's interval (kept for Telegram) is 10 s here, its maximum; the console
    still shows the answer being written well before the first 10 s tick."""
    anthropic.enqueue(hang_mid_stream("Thinking about it"))
    configure(tmp_path, anthropic, flush="10s")
    session = start(tmp_path)
    try:
        session.send("a hard question\r")
        session.read_until(lambda out: "Thinking about it" in out, timeout=8)
        session.send("\x03")
        session.read_until(lambda out: "[cancelled]" in out)
        # Ctrl-D only once the prompt is drawn again (a key sent while "[cancelled]" is
        # being printed above the prompt can be lost), as the test above does.
        session.read_until(lambda out: "›" in out.split("[cancelled]")[-1])
        session.send_eof()
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise


def test_streamed_markdown_is_cut_into_finished_blocks() -> None:
    text = "One\nstill one\n\n```py\nx = 1\n\ny = 2\n```\nTwo is being wri"
    split = split_blocks(text)
    assert split.finished == ["One\nstill one", "```py\nx = 1\n\ny = 2\n```"]
    assert text[split.tail_start :] == "Two is being wri"
    open_fence = split_blocks("```py\nx = 1\n\n")
    assert open_fence.finished == [], "a blank line inside an open fence ends nothing"


def test_a_command_typed_mid_answer_leaves_no_partial_copy_in_the_scrollback(
    tmp_path: Path, anthropic: AnthropicFake
) -> None:
    """/status typed while an answer streams: the scrollback keeps the line typed, not
    the half-written answer; the answer appears once, whole."""
    anthropic.enqueue(hang_mid_stream("Thinking about it"))
    configure(tmp_path, anthropic)
    size = (24, 80)
    session = start_chat(tmp_path, KEY, size=size)
    try:
        session.send("a hard question\r")
        session.read_until(lambda out: "Thinking about it" in out)
        session.send("/status\r")
        session.read_until(lambda out: "Turns:" in out)
        session.send("/cancel\r")
        session.read_until(lambda out: "[cancelled]" in out)
        session.read_until(lambda out: "›" in out.split("[cancelled]")[-1])
        session.send_eof()
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    lines = screen_lines(session.output, size)
    shown = [line for line in lines if "Thinking about it" in line]
    assert len(shown) == 1, "\n".join(lines)
    assert any(line.startswith("› /status") for line in lines), "\n".join(lines)


def test_links_show_their_url_in_a_terminal(tmp_path: Path, anthropic: AnthropicFake) -> None:
    anthropic.enqueue(
        text_reply("Read [the guide](https://example.com/guide) or <https://example.org>.\n")
    )
    configure(tmp_path, anthropic)
    session = start(tmp_path)
    try:
        session.send("where are the docs\r")
        # The rendered answer (not the raw Markdown streamed live), then the prompt.
        rendered = "the guide (https://example.com/guide)"
        session.read_until(lambda out: rendered in out and "›" in out.split(rendered)[-1])
        session.send_eof()
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    assert "the guide (https://example.com/guide)" in session.visible
    assert "https://example.org (https://example.org)" not in session.visible
    assert "https://example.org" in session.visible


def test_autolinks_and_same_text_links_are_not_doubled() -> None:
    assert plain_autolinks("see <https://a.b/c> and [https://x.y](https://x.y)") == (
        "see https://a.b/c and https://x.y"
    )
    assert plain_autolinks("code `<https://a.b>` stays") == "code `<https://a.b>` stays"
    assert plain_autolinks("```\n<https://a.b>\n```\n") == "```\n<https://a.b>\n```\n"
