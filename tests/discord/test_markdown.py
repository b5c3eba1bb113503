"""Discord's dialect: Markdown passes through, except what Discord shows raw (a pipe
table, a heading of four or more ``#``, a thematic break); inside code nothing changes,
and what is code is what the kit's splitter takes for code."""

from __future__ import annotations

from thalos_bot.channels.text.fences import scan
from thalos_bot_discord.markdown import RULE, to_discord


def test_a_table_becomes_an_aligned_code_block() -> None:
    assert to_discord("| a | bb |\n|---|:-:|\n| ccc | d |\nafter") == (
        "```\na    bb\n---  --\nccc  d\n```\nafter"
    )


def test_deep_headings_and_breaks_are_redrawn_and_the_rest_is_kept() -> None:
    text = "# Title\n#### Deep ####\n---\n**bold** and `code`"
    assert to_discord(text) == f"# Title\n**Deep**\n{RULE}\n**bold** and `code`"


def test_nothing_inside_code_changes_and_a_language_line_does_not_close_it() -> None:
    code = "```py\n#### not a heading\n```sh\n| a | b |\n|---|---|\n---\n```"
    assert to_discord(code + "\n#### after") == code + "\n**after**"
    assert scan(code) is None, "the splitter reads the same fence"
