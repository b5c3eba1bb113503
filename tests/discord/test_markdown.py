"""Discord's dialect: Markdown passes through, except what Discord shows raw (a pipe
table, a heading of four or more ``#``, a thematic break); inside code nothing changes,
and what is code is what the kit's splitter takes for code."""

from __future__ import annotations

import pytest

from tests.fakes.discord_markdown import shown
from thalos_bot.channels.text.fences import BREAK, scan
from thalos_bot_discord.markdown import RULE, to_discord


def test_a_table_becomes_an_aligned_code_block() -> None:
    assert to_discord("| a | bb |\n|---|:-:|\n| ccc | d |\nafter") == (
        "```\na   │ bb\n────┼───\nccc │ d\n```\nafter"
    )


def test_deep_headings_and_breaks_are_redrawn_and_the_rest_is_kept() -> None:
    text = "# Title\n#### Deep ####\n---\n**bold** and `code`"
    assert to_discord(text) == f"# Title\n**Deep**\n{RULE}\n**bold** and `code`"


def test_nothing_inside_code_changes_and_a_language_line_does_not_close_it() -> None:
    code = "```py\n#### not a heading\n```sh\n| a | b |\n|---|---|\n---\n```"
    rendered = to_discord(code + "\n#### after")
    assert rendered.replace(BREAK, "") == code + "\n**after**"
    assert scan(code) is None, "the splitter reads the same fence"
    text, styles = shown(rendered)
    assert text.replace(BREAK, "") == "#### not a heading\n```sh\n| a | b |\n|---|---|\n---\nafter"
    assert styles == {"pre", "bold"}


@pytest.mark.parametrize(
    ("markdown", "code"),
    [
        ("```md\nRun:\n```sh\nls\n```", "Run:\n```sh\nls"),  # ```sh does not close it
        ("````md\nRun:\n```sh\nls\n```\n````", "Run:\n```sh\nls\n```"),
        ("~~~md\nRun:\n```sh\nls\n```\n~~~", "Run:\n```sh\nls\n```"),
        ('```py\nfence = "```"\n```', 'fence = "```"'),
        ("```py\nstill open", "still open"),
    ],
)
def test_a_code_block_shows_in_discord_as_written(markdown: str, code: str) -> None:
    """Discord's client ends a block at the first three backticks anywhere and knows no
    longer fence and no tildes: what it shows is the code CommonMark reads, whole."""
    text, styles = shown(to_discord(markdown))
    assert (text.replace(BREAK, ""), styles) == (code, frozenset({"pre"}))
