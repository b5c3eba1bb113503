"""Model text cannot reach past the chat: for each dialect, hostile model output (mass
mentions, links with schemes a client would run, raw HTML) goes through the renderer,
and what comes out pings nobody, links only to http(s) or mailto, and runs no HTML."""

from __future__ import annotations

import re

from hypothesis import given, settings

from tests.channels.hostile import HOSTILE_TEXT, html_problems
from tests.fakes.discord_wire import pings
from thalos_bot_discord.client import no_pings
from thalos_bot_discord.markdown import to_discord
from thalos_bot_matrix.render import edit, message
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
