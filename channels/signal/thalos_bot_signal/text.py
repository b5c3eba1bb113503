"""The model's Markdown as Signal shows it: plain text with style ranges.

Signal has no markup: a message carries its text and ranges ``start:length:STYLE``
counted in UTF-16 code units. The kit's renderer walks the Markdown; this dialect
writes each style as a pair of private-use marks, which :func:`styled` turns into
ranges when the message is sent. A link shows its label and then its address.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.channels.markdown.dialect import Style
from thalos_bot.channels.markdown.render import Renderer
from thalos_bot.channels.text.measure import utf16_len

STYLES = ("BOLD", "ITALIC", "STRIKETHROUGH", "MONOSPACE")
_OPEN = {name: chr(0xE000 + n) for n, name in enumerate(STYLES)}
_CLOSE = {name: chr(0xE010 + n) for n, name in enumerate(STYLES)}
_MARKS = {mark: (name, True) for name, mark in _OPEN.items()} | {
    mark: (name, False) for name, mark in _CLOSE.items()
}
_KIT = {"bold": "BOLD", "italic": "ITALIC", "strike": "STRIKETHROUGH"}


def _unmarked(text: str) -> str:
    return "".join(ch for ch in text if ch not in _MARKS)


@dataclass(frozen=True, slots=True)
class SignalDialect:
    code_in_emphasis: bool = True
    rule: str = "———"

    def escape(self, text: str) -> str:
        return _unmarked(text)

    def visible(self, rendered: str) -> str:
        return _unmarked(rendered)

    def style(self, style: Style) -> tuple[str, str]:
        name = _KIT[style]
        return _OPEN[name], _CLOSE[name]

    def link(self, url: str) -> tuple[str, str] | None:
        return "", f" ({_unmarked(url)})"

    def code_span(self, code: str) -> str:
        return _mono(code)

    def code_block(self, code: str, language: str | None) -> str:
        return _mono(code.rstrip("\n"))

    def preformatted(self, text: str) -> str:
        return _mono(text)

    def quote(self) -> tuple[str, str]:
        return "", ""


def _mono(text: str) -> str:
    return f"{_OPEN['MONOSPACE']}{_unmarked(text)}{_CLOSE['MONOSPACE']}"


render = Renderer(SignalDialect()).render
"""Markdown with its styles as marks (see :func:`styled`)."""


def styled(marked: str) -> tuple[str, list[str]]:
    """The text of a rendered message and its ranges as signal-cli's ``textStyle``
    takes them (``start:length:STYLE``, UTF-16 code units)."""
    out: list[str] = []
    at = 0
    opened: dict[str, int] = {}
    ranges: list[str] = []
    for ch in marked:
        mark = _MARKS.get(ch)
        if mark is None:
            out.append(ch)
            at += utf16_len(ch)
            continue
        name, opening = mark
        if opening:
            opened.setdefault(name, at)
        elif name in opened:
            start = opened.pop(name)
            if at > start:
                ranges.append(f"{start}:{at - start}:{name}")
    return "".join(out), ranges
