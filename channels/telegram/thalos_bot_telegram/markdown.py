"""The model's Markdown, as Telegram HTML.

Covered: **bold** / __bold__, *italic* / _italic_, ~~strike~~, `inline code`, fenced
code with a language, [links](https://...), headings (shown bold), bullet lists (shown
with •), numbered lists (as typed), > blockquotes. Everything else is text, with
``& < >`` escaped. The output is always well-formed: a marker without its partner (as
in text still being streamed) stays literal, and a fence still open at the end of the
text is closed. Telegram's own check has the last word; a part it refuses is sent as
plain text instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape as _escape

from thalos_bot_telegram.fences import Fence, closes, opens

_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(.*)$")
_QUOTE = re.compile(r"^[ \t]{0,3}>[ \t]?(.*)$")
_RULE = re.compile(r"^[ \t]{0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
_SAFE_URL = re.compile(r"^(https?://|tg://|mailto:)[^\s\"<>]+$", re.IGNORECASE)

# Inline constructs, tried in this order when two start at the same place.
_CODE = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^()\s]+)\)")
_AUTOLINK = re.compile(r"<((?:https?|tg)://[^>\s]+)>")
_BOLD_ITALIC = re.compile(r"\*\*\*(?=\S)(.+?)(?<=\S)\*\*\*")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ITALIC = re.compile(
    r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])"
)


def escape(text: str) -> str:
    """Escape text for Telegram HTML (``&``, ``<``, ``>``; quotes may stay)."""
    return _escape(text, quote=False)


def to_html(source: str) -> str:
    lines = source.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = opens(line)
        if fence is not None:
            index = _code_block(lines, index + 1, fence, out)
            continue
        if _QUOTE.match(line):
            quoted: list[str] = []
            while index < len(lines) and (match := _QUOTE.match(lines[index])):
                quoted.append(_line(match.group(1)))
                index += 1
            out.append("<blockquote>" + "\n".join(quoted) + "</blockquote>")
            continue
        out.append(_line(line))
        index += 1
    return "\n".join(out)


def _code_block(lines: list[str], start: int, fence: Fence, out: list[str]) -> int:
    """Render the block whose first content line is ``lines[start]``; return the index
    of the line after its closing fence (or the end: an unclosed fence is closed)."""
    end = start
    while end < len(lines) and not closes(lines[end], fence):
        end += 1
    code = "\n".join(lines[start:end])
    if code.strip():
        language = fence.language
        if language:
            out.append(
                f'<pre><code class="language-{escape(language)}">{escape(code)}</code></pre>'
            )
        else:
            out.append(f"<pre>{escape(code)}</pre>")
    return end + 1


def _line(line: str) -> str:
    if _RULE.match(line):
        return escape(line)
    heading = _HEADING.match(line)
    if heading:
        return f"<b>{inline(heading.group(1))}</b>" if heading.group(1) else ""
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {inline(bullet.group(2))}"
    return inline(line)


def _link(match: re.Match[str]) -> str:
    label, url = match.group(1), match.group(2)
    if not _SAFE_URL.match(url):
        return escape(match.group(0))
    return f'<a href="{_escape(url, quote=True)}">{inline(label)}</a>'


def _autolink(match: re.Match[str]) -> str:
    url = match.group(1)
    return f'<a href="{_escape(url, quote=True)}">{escape(url)}</a>'


def _wrap(tag: str) -> Callable[[re.Match[str]], str]:
    def render(match: re.Match[str]) -> str:
        inner = next(group for group in match.groups() if group is not None)
        return f"<{tag}>{inline(inner)}</{tag}>"

    return render


def _code(match: re.Match[str]) -> str:
    return f"<code>{escape(match.group(2))}</code>"


def _bold_italic(match: re.Match[str]) -> str:
    return f"<b><i>{inline(match.group(1))}</i></b>"


_INLINE: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (_CODE, _code),
    (_LINK, _link),
    (_AUTOLINK, _autolink),
    (_BOLD_ITALIC, _bold_italic),
    (_BOLD, _wrap("b")),
    (_STRIKE, _wrap("s")),
    (_ITALIC, _wrap("i")),
)


def inline(text: str) -> str:
    """Inline Markdown as HTML. The earliest construct wins, its inside is rendered on its
    own, then the rest: tags therefore always nest properly."""
    out: list[str] = []
    position = 0
    while position < len(text):
        best: tuple[re.Match[str], Callable[[re.Match[str]], str]] | None = None
        for pattern, render in _INLINE:
            match = pattern.search(text, position)
            if match is not None and (best is None or match.start() < best[0].start()):
                best = (match, render)
        if best is None:
            break
        match, render = best
        out.append(escape(text[position : match.start()]))
        out.append(render(match))
        position = match.end()
    out.append(escape(text[position:]))
    return "".join(out)
