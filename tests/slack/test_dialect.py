"""Markdown into Slack's mrkdwn, on the kit's walk."""

from __future__ import annotations

from thalos_bot.channels.text.fences import BREAK
from thalos_bot.channels.text.split import split
from thalos_bot_slack.dialect import MrkdwnDialect, to_mrkdwn
from thalos_bot_slack.wire import TEXT_PART


def test_styles_links_and_escapes() -> None:
    assert to_mrkdwn("**b** _i_ ~~s~~ `a<b` [x](https://e.org)") == (
        "*b* _i_ ~s~ `a&lt;b` <https://e.org|x>"
    )


def test_a_link_slack_should_not_open_is_text() -> None:
    assert to_mrkdwn("[files](ftp://example.org/a)") == "files"


def test_every_line_of_a_quote_is_quoted() -> None:
    assert to_mrkdwn("> one\n> two\n\nafter") == "> one\n> two\n\nafter"


def test_code_blocks_keep_their_text_escaped_and_drop_the_language() -> None:
    assert to_mrkdwn("```py\nif a < b & c:\n```") == "```\nif a &lt; b &amp; c:\n```"


def test_three_backticks_inside_code_do_not_end_the_block() -> None:
    """Slack ends a code block at the first three backticks in a row, wherever they are:
    the block holds none, and reads as written once the zero-width spaces are dropped."""
    for markdown in ("````md\n```sh\nls\n```\n````", '~~~\nfence = "```"\n~~~'):
        rendered = to_mrkdwn(markdown)
        inner = rendered.removeprefix("```\n").removesuffix("\n```")
        assert "```" not in inner, rendered
        assert inner.replace(BREAK, "") == markdown.split("\n", 1)[1].rsplit("\n", 1)[0]
        assert BREAK not in MrkdwnDialect().visible(rendered)


def test_what_a_reader_sees() -> None:
    dialect = MrkdwnDialect()
    assert dialect.visible("*b* <https://e.org|x> &amp; `c`") == "b x & c"


def test_a_split_part_closes_and_reopens_its_fence() -> None:
    code = "```\n" + "\n".join(f"line {n}" for n in range(1500)) + "\n```"
    parts = [part.text for part in split(code, None, TEXT_PART)]  # as the engine cuts
    assert len(parts) >= 3
    assert all(p.startswith("```") and p.rstrip().endswith("```") for p in parts)
