"""Model text cannot reach past the chat: for each dialect, hostile model output (mass
mentions, links with schemes a client would run, raw HTML) goes through the renderer,
and what comes out pings nobody, links only to http(s) or mailto, and runs no HTML."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.channels.hostile import HOSTILE_TEXT, html_problems
from tests.fakes.discord_wire import pings
from thalos_bot.channels.text.measure import utf16_len
from thalos_bot_discord.client import no_pings
from thalos_bot_discord.markdown import to_discord
from thalos_bot_email.threads import html as email_html
from thalos_bot_matrix.render import edit, message
from thalos_bot_signal.text import _MARKS as SIGNAL_MARKS
from thalos_bot_signal.text import render as signal_render
from thalos_bot_signal.text import styled as signal_styled
from thalos_bot_slack.dialect import to_mrkdwn
from thalos_bot_telegram.markdown import to_html as telegram_html
from thalos_bot_web.render import TAGS as WEB_TAGS
from thalos_bot_web.render import markdown as web_html

EXAMPLES = settings(max_examples=300, deadline=None)
TELEGRAM_TAGS = {"b", "i", "s", "code", "pre", "blockquote", "a"}
MATRIX_TAGS = {
    "a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead",
    "tr", "ul",
}  # fmt: skip
SLACK_MARKUP = re.compile(r"<([^<>]*)>")
SLACK_LINK = re.compile(r"^(https?://|mailto:)[^\s<>|]+\|")


@EXAMPLES
@given(HOSTILE_TEXT)
def test_telegram_html(text: str) -> None:
    assert html_problems(telegram_html(text), TELEGRAM_TAGS) == []


@EXAMPLES
@given(HOSTILE_TEXT)
def test_slack_mrkdwn(text: str) -> None:
    """Slack reads ``<…>`` as its own markup: ``<!channel>``, ``<@U…>``, ``<#C…>`` and
    ``<!subteam^…>`` notify people, ``<scheme:…|x>`` is a link. Only a safe link may
    remain."""
    rendered = to_mrkdwn(text)
    for inner in SLACK_MARKUP.findall(rendered):
        assert SLACK_LINK.match(inner), f"<{inner}> in {rendered!r}"


@EXAMPLES
@given(HOSTILE_TEXT)
def test_discord_markdown(text: str) -> None:
    """Discord pings what the text names unless ``allowed_mentions`` says otherwise;
    every message carries :func:`no_pings`, so nobody is."""
    assert pings(to_discord(text), no_pings().to_dict()) == (False, [], [])


@EXAMPLES
@given(HOSTILE_TEXT)
def test_matrix_html(text: str) -> None:
    """The HTML shows no image, script or link a client would run, and the content
    says it mentions nobody (``m.mentions``), so neither ``@room`` nor a user id or
    display name in the text notifies anyone (the homeserver's push rules read it)."""
    for content in (message(text), edit("$event", text)):
        assert html_problems(content["formatted_body"], MATRIX_TAGS) == []
        assert content["m.mentions"] == {}
    assert edit("$event", text)["m.new_content"]["m.mentions"] == {}


@EXAMPLES
@given(HOSTILE_TEXT)
def test_web_html(text: str) -> None:
    assert html_problems(web_html(text), set(WEB_TAGS)) == []


@EXAMPLES
@given(HOSTILE_TEXT)
def test_email_html(text: str) -> None:
    """The mail's HTML part: the fixed wrapper, then only the kit's HTML dialect inside
    (no image, script, style or link a mail client would run)."""
    whole = email_html(text, plain=False)
    head, tail = email_html("", plain=False).split("</div>")
    assert whole.startswith(head)
    assert whole.endswith("</div>" + tail)
    inner = whole[len(head) : len(whole) - len("</div>" + tail)]
    assert html_problems(inner, TELEGRAM_TAGS) == []


@EXAMPLES
@given(HOSTILE_TEXT | st.text(alphabet=[*SIGNAL_MARKS, "a", "*", "`"], max_size=30))
def test_signal_text(text: str) -> None:
    """Signal's styles are ranges beside the text (``textStyle``), never markup in it:
    nothing the model writes (the private marks the renderer uses included) becomes a
    style of its own choosing or a mark left in what is shown, and every range lies in
    the text."""
    shown, ranges = signal_styled(signal_render(text))
    assert not any(ch in SIGNAL_MARKS for ch in shown)
    length = utf16_len(shown)
    for found in ranges:
        start, size, _ = found.split(":")
        assert int(start) >= 0
        assert int(size) > 0
        assert int(start) + int(size) <= length


@EXAMPLES
@given(
    st.text(alphabet=[*SIGNAL_MARKS, "a", " "], max_size=30).filter(
        lambda text: not text.startswith("    ")
    )
)
def test_signal_marks_in_model_text_style_nothing(text: str) -> None:
    """Text with no Markdown, only the renderer's own private marks: no style at all.
    (Four spaces before the first word are Markdown: an indented code block.)"""
    _, ranges = signal_styled(signal_render(text))
    assert ranges == []
