"""Every link of README.md and of the pages in docs/ lands: a file it names exists, and
an anchor (``](#anchor)``, ``](page.md#anchor)``) names a heading of that page, with
the anchors GitHub makes: lower case, punctuation dropped, spaces as hyphens, and
``-1``, ``-2`` ... for repeated headings. Lines inside code fences are not headings."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
IN_PAGE_LINK = re.compile(r"\]\(#([^)\s]+)\)")


def slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def outside_fences(text: str) -> list[str]:
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        marker = re.match(r"^\s*(```|~~~)", line)
        if marker:
            fence = None if fence == marker.group(1) else fence or marker.group(1)
            continue
        if fence is None:
            lines.append(line)
    return lines


def anchors(lines: list[str]) -> set[str]:
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for line in lines:
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(1))
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def test_the_slugs_are_githubs() -> None:
    assert slug("Configuration reference (`bot.toml`)") == "configuration-reference-bottoml"
    assert slug("Approvals, guards and limits") == "approvals-guards-and-limits"
    assert slug("1. Create the bot") == "1-create-the-bot"
    page = "## Settings\n```toml\n# not a heading\n```\n### Settings\n"
    assert anchors(outside_fences(page)) == {
        "settings",
        "settings-1",
    }


def test_every_in_page_link_of_the_readme_has_its_heading() -> None:
    lines = outside_fences(README.read_text(encoding="utf-8"))
    known = anchors(lines)
    links = [link for line in lines for link in IN_PAGE_LINK.findall(line)]
    assert links, "the README links within itself (its table of contents at least)"
    broken = sorted({link for link in links if link not in known})
    assert broken == [], f"README.md links to headings that do not exist: {broken}"


def test_every_link_of_the_readme_and_the_docs_lands() -> None:
    broken: list[str] = []
    for page in PAGES:
        lines = outside_fences(page.read_text(encoding="utf-8"))
        for target in (link for line in lines for link in LINK.findall(line)):
            if target.startswith(("http://", "https://", "mailto:", "file:")):
                continue
            file, _, anchor = target.partition("#")
            landing = (page.parent / file).resolve() if file else page
            if not landing.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
                continue
            if anchor and landing.suffix == ".md":
                known = anchors(outside_fences(landing.read_text(encoding="utf-8")))
                if anchor not in known:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == [], "links that do not land:\n" + "\n".join(broken)
