"""Model text written to reach past the chat: mass mentions in every platform's syntax,
links with schemes a client would run, raw HTML, and the Markdown around them.

A prompt injection can make the model write any of it; every dialect renderer gets it,
mixed with Markdown punctuation, and must give back text that pings nobody, opens no
such link and runs no HTML. :data:`HOSTILE_TEXT` is the hypothesis strategy;
:class:`Tags` reads HTML the way a browser would, to check what it would act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from hypothesis import strategies as st

MENTIONS = [
    "@everyone", "@here", "@room", "@channel", "<!channel>", "<!here>", "<!everyone>",
    "<!subteam^S0123ABCD>", "<@U0123ABCD>", "<@W0123ABCD>", "<#C0123ABCD>", "<@&123456789>",
    "<@123456789>", "<@!123456789>", "@alice:example.org", "<!date^1392734382^x|y>",
]  # fmt: skip
SCHEMES = [
    "javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)", "vbscript:x",
    "data:text/html;base64,PHNjcmlwdD4=", "file:///etc/passwd", "tg://proxy?server=evil",
    "tg://user?id=123456", "intent://evil#Intent;end", "slack://open", "matrix:u/evil",
    "javascript&#58;alert(1)", "  javascript:alert(1)", "https://example.org/ok",
]  # fmt: skip
HTML = [
    "<script>alert(1)</script>", '<img src=x onerror="alert(1)">', "<iframe src=//evil>",
    '<a href="javascript:alert(1)">x</a>', "<svg onload=alert(1)>", "<style>*{}</style>",
    '<b onclick="alert(1)">b</b>', "<!-- x -->", "&lt;script&gt;", "<form action=//evil>",
    '<a href="https://example.org" onmouseover="alert(1)">x</a>', "</code></pre><script>",
]  # fmt: skip
PUNCTUATION = [
    "**", "*", "_", "~~", "`", "```", "\n", "\n\n", " ", "> ", "| a | b |\n|---|---|\n",
    "# ", "- ", "1. ", "[", "]", "(", ")", "<", ">", "&", '"', "'", "\\",
]  # fmt: skip


def _link(label: str, url: str) -> str:
    return f"[{label}]({url})"


PIECES = st.one_of(
    st.sampled_from(MENTIONS),
    st.sampled_from(HTML),
    st.sampled_from(PUNCTUATION),
    st.builds(_link, st.sampled_from(["x", "click", *MENTIONS[:3]]), st.sampled_from(SCHEMES)),
    st.builds("<{}>".format, st.sampled_from(SCHEMES)),
    st.builds("![{}]({})".format, st.just("img"), st.sampled_from(SCHEMES)),
    st.sampled_from(SCHEMES),
    st.text(alphabet="ab c\n", max_size=6),
)
HOSTILE_TEXT = st.lists(PIECES, min_size=1, max_size=14).map("".join)
SAFE_LINK = re.compile(r"^(https?://|mailto:)", re.IGNORECASE)


@dataclass
class Tags(HTMLParser):
    """Every start tag of an HTML string, with its attributes, as a browser parses it."""

    found: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    @classmethod
    def of(cls, markup: str) -> list[tuple[str, dict[str, str]]]:
        parser = cls()
        parser.feed(markup)
        parser.close()
        return parser.found


def html_problems(markup: str, allowed: set[str]) -> list[str]:
    """What in ``markup`` a client could act on: a tag not in ``allowed``, an event
    handler or style, a link or source that is not http(s) or mailto."""
    problems = []
    for tag, attrs in Tags.of(markup):
        if tag not in allowed:
            problems.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name in {"style", "src", "srcset", "action"}:
                problems.append(f"<{tag} {name}>")
            if name == "href" and not SAFE_LINK.match(value.strip()):
                problems.append(f"<{tag} href={value!r}>")
    return problems
