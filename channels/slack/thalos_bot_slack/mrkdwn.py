"""Markdown, as the model writes it, into Slack's mrkdwn.

mrkdwn is not Markdown: bold is ``*x*``, italic ``_x_``, strike ``~x~``, a link
``<url|text>``; there are no headings (they become bold lines), no tables (they become a
code block, so their columns stay aligned) and no list syntax (``•`` bullets). ``&``,
``<`` and ``>`` must be escaped everywhere, code included, or Slack reads them as its own
markup (``<!channel>`` would notify everyone). Code spans and fenced blocks keep their
content; a fence's language tag is dropped (Slack shows it as text).
"""

from __future__ import annotations

import re

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+|mailto:[^)\s]+)\)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_BOLD_MARK = "\x01"


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _inline(text: str) -> str:
    """One line of prose (no code spans in it)."""
    links: list[str] = []

    def link(match: re.Match[str]) -> str:
        links.append(f"<{match[2]}|{escape(match[1])}>")
        return f"\x02{len(links) - 1}\x02"

    text = _LINK.sub(link, text)
    text = escape(text)
    text = _BOLD.sub(lambda m: f"{_BOLD_MARK}{m[1] or m[2]}{_BOLD_MARK}", text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = text.replace(_BOLD_MARK, "*")
    return re.sub("\x02(\\d+)\x02", lambda m: links[int(m[1])], text)


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        body = _BOLD.sub(lambda m: m[1] or m[2], heading[1])
        return f"*{_spans(body)}*" if body else ""
    bullet = _BULLET.match(line)
    if bullet and not line.strip().startswith(("***", "---")):
        line = f"{bullet[1]}• {line[bullet.end() :]}"
    return _spans(line)


def _spans(line: str) -> str:
    out: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(line):
        out.append(_inline(line[last : match.start()]))
        out.append(f"`{escape(match[2])}`")
        last = match.end()
    out.append(_inline(line[last:]))
    return "".join(out)


def _is_table_row(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") and stripped.count("|") >= 2


def to_mrkdwn(markdown: str) -> str:
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    table: list[str] = []

    def flush_table() -> None:
        if table:
            rows = [r for r in table if not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", r)]
            out.append("```\n" + "\n".join(escape(r.strip()) for r in rows) + "\n```")
            table.clear()

    for line in lines:
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening[1].startswith(fence[0]) and len(opening[1]) >= len(fence):
                out.append("```")
                fence = None
            else:
                out.append(escape(line))
            continue
        if opening:
            flush_table()
            fence = opening[1]
            out.append("```")
            continue
        if _is_table_row(line):
            table.append(line)
            continue
        flush_table()
        out.append(_line(line))
    flush_table()
    if fence is not None:
        out.append("```")  # an unclosed fence still closes
    return "\n".join(out)
