"""The Agent Skills conformance table: skill folders of our own, each with the verdict the
specification (agentskills.io/specification) gives it.

``spec`` is the specification's verdict. ``ours`` is set only where we deliberately judge
otherwise (see :data:`OURS_DIFFER`); ``test_conformance`` checks our grammar against the
table, and runs the reference validator (``skills-ref``) over the same folders.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path


def words(count: int) -> str:
    """A description of exactly ``count`` characters: words, single spaces, a full stop."""
    return ("Use this skill for the recurring task it names " * 40)[: count - 1] + "."


def folded(key: str, text: str) -> list[str]:
    """``key: >-`` with ``text`` wrapped over indented lines (YAML folds them back)."""
    return [f"{key}: >-", *(f"  {line}" for line in textwrap.wrap(text, 70))]


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    folder: str
    text: str | bytes
    spec: bool
    """The specification's verdict: True for a valid skill."""
    ours: bool | None = None
    """Our verdict, where it deliberately differs from the spec's (None: the same)."""
    file: str = "SKILL.md"
    extra: dict[str, str] = field(default_factory=dict)
    """Other files of the folder, by relative path."""
    link_out: bool = False
    """Make ``SKILL.md`` a symlink to a copy outside the skills root."""

    @property
    def expected(self) -> bool:
        return self.spec if self.ours is None else self.ours

    def write(self, root: Path) -> Path:
        """Write the folder under ``root``; returns the folder."""
        folder = root / self.folder
        folder.mkdir(parents=True)
        raw = self.text.encode("utf-8") if isinstance(self.text, str) else self.text
        target = folder / self.file
        if self.link_out:
            outside = root.parent / f"outside-{self.id}" / self.file
            outside.parent.mkdir(parents=True)
            outside.write_bytes(raw)
            target.symlink_to(outside)
        else:
            target.write_bytes(raw)
        for relative, content in self.extra.items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        return folder


def fm(*lines: str, body: str = "# Steps\n\n1. Do it.\n") -> str:
    """A skill file with these frontmatter lines."""
    return "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body


def named(name: str, *lines: str, **kwargs: str) -> str:
    return fm(f"name: {name}", "description: Does one useful thing.", *lines, **kwargs)


N64 = "a" + "-b" * 31 + "c"  # 64 characters
N65 = N64 + "d"

CASES: list[Case] = [
    # --- valid by the specification -----------------------------------------------
    Case("minimal", "pdf-processing", named("pdf-processing"), spec=True),
    Case(
        "every-field",
        "pdf-processing",
        named(
            "pdf-processing",
            "license: Apache-2.0",
            "compatibility: Requires Python 3.14+ and uv",
            "metadata:",
            "  author: example-org",
            '  version: "1.0"',
            "allowed-tools: Bash(git:*) Bash(jq:*) Read",
        ),
        spec=True,
    ),
    Case("leading-digit", "2fa-setup", named("2fa-setup"), spec=True),
    Case("one-character", "a", named("a"), spec=True),
    Case("64-characters", N64, named(N64), spec=True),
    Case("digits-only", "123", named("123"), spec=True),
    Case("quoted-name", "pdf", fm('name: "pdf"', "description: d"), spec=True),
    Case("description-1024", "long", fm("name: long", f"description: {words(1024)}"), spec=True),
    Case(
        "description-941-folded",
        "webapp-testing",
        fm("name: webapp-testing", *folded("description", words(941))),
        spec=True,
    ),
    Case(
        "quoted-colon",
        "pdf",
        fm("name: pdf", 'description: "Use this skill when: the user asks about PDFs"'),
        spec=True,
    ),
    Case("license-2000", "pdf", named("pdf", f"license: {'L' * 2000}"), spec=True),
    Case(
        "license-file",
        "pdf",
        named("pdf", "license: Proprietary. LICENSE.txt has complete terms"),
        extra={"LICENSE.txt": "All rights reserved.\n"},
        spec=True,
    ),
    Case("compatibility-500", "pdf", named("pdf", f"compatibility: {'c' * 500}"), spec=True),
    Case(
        "metadata-looks-numeric",
        "pdf",
        named("pdf", "metadata:", "  version: 1.10", "  draft: no"),
        spec=True,
    ),
    Case("crlf", "pdf", named("pdf").replace("\n", "\r\n"), spec=True),
    Case("long-body", "pdf", named("pdf", body="step\n" * 900), spec=True),
    Case(
        "resources",
        "pdf-forms",
        named("pdf-forms", body="Run scripts/fill.py; see references/FIELDS.md.\n"),
        extra={
            "scripts/fill.py": "print('filled')\n",
            "references/FIELDS.md": "# Fields\n",
            "assets/template.txt": "Dear {name},\n",
        },
        spec=True,
    ),
    Case("lower-case-file", "pdf", named("pdf"), file="skill.md", spec=True),
    Case("unicode-letters", "über-tool", named("über-tool"), spec=True),
    Case("unicode-script", "技能", named("技能"), spec=True),
    Case("nfkc-ligature", "file", named("\ufb01le"), spec=True),  # "ﬁle" is "file" in NFKC
    Case(
        "dashes-in-a-value",
        "pdf",
        fm('description: "Splits a file at --- marks"', "name: pdf"),
        spec=True,
    ),
    Case("byte-order-mark", "pdf", b"\xef\xbb\xbf" + named("pdf").encode(), spec=True),
    # --- invalid by the specification ---------------------------------------------
    Case("upper-case", "PDF-Processing", named("PDF-Processing"), spec=False),
    Case("leading-hyphen", "-pdf", named("-pdf"), spec=False),
    Case("trailing-hyphen", "pdf-", named("pdf-"), spec=False),
    Case("double-hyphen", "pdf--processing", named("pdf--processing"), spec=False),
    Case("underscore", "pdf_processing", named("pdf_processing"), spec=False),
    Case("space", "pdf processing", fm('name: "pdf processing"', "description: d"), spec=False),
    Case("65-characters", N65, named(N65), spec=False),
    Case("folder-mismatch", "pdf-tools", named("pdf-processing"), spec=False),
    Case("folder-case-mismatch", "Pdf", named("pdf"), spec=False),
    Case("no-name", "pdf", fm("description: d"), spec=False),
    Case("no-description", "pdf", fm("name: pdf"), spec=False),
    Case("empty-description", "pdf", fm("name: pdf", 'description: ""'), spec=False),
    Case("blank-description", "pdf", fm("name: pdf", "description:"), spec=False),
    Case("list-description", "pdf", fm("name: pdf", "description:", "  - d"), spec=False),
    Case("description-1025", "long", fm("name: long", f"description: {words(1025)}"), spec=False),
    Case(
        "description-1068-big-body",
        "claude-api",
        fm("name: claude-api", f"description: {words(1068)}", body="x" * 90_000),
        spec=False,
    ),
    Case("compatibility-501", "pdf", named("pdf", f"compatibility: {'c' * 501}"), spec=False),
    Case("no-frontmatter", "pdf", "# Just markdown\n", spec=False),
    Case("unterminated", "pdf", "---\nname: pdf\ndescription: d\n", spec=False),
    Case(
        "unquoted-colon",
        "pdf",
        fm("name: pdf", "description: Use this skill when: the user asks about PDFs"),
        spec=False,
    ),
    Case("duplicate-key", "pdf", fm("name: pdf", "description: a", "description: b"), spec=False),
    Case("unknown-key", "pdf", named("pdf", "model: opus"), spec=False),
    Case("not-a-map", "pdf", "---\n- name\n- description\n---\n", spec=False),
    Case("not-utf8", "pdf", named("pdf").encode() + b"\xff\xfe\n", spec=False),
    # --- where we deliberately judge otherwise --------------------------------------
    Case(
        "anchors-and-aliases",
        "pdf",
        fm("name: pdf", "description: &d Does a thing.", "compatibility: *d"),
        spec=True,  # plain YAML
        ours=False,
    ),
    Case(
        "explicit-yaml-tag", "pdf", fm("name: pdf", "description: !!str d"), spec=True, ours=False
    ),
    Case("over-1-mib", "pdf", named("pdf", body="x" * (1024 * 1024)), spec=True, ours=False),
    Case("skill-md-links-out", "pdf", named("pdf"), spec=True, ours=False, link_out=True),
    Case("tags-extension", "pdf", named("pdf", "tags: [pdf, forms]"), spec=False, ours=True),
    Case(
        "allowed-tools-list",
        "pdf",
        named("pdf", "allowed-tools:", "  - Read", "  - Bash(git:*)"),
        spec=False,  # "a space-separated string"
        ours=True,
    ),
    Case("empty-compatibility", "pdf", named("pdf", 'compatibility: ""'), spec=False),
    Case("nested-metadata", "pdf", named("pdf", "metadata:", "  a:", "    b: c"), spec=False),
    Case("list-metadata", "pdf", named("pdf", "metadata:", "  a:", "    - b"), spec=False),
]

OURS_DIFFER = {
    # Where our verdict is not the specification's, and why.
    "anchors-and-aliases": "refused: a small file must not expand into a large object graph",
    "explicit-yaml-tag": "refused: '!!' tags build values that are not text",
    "over-1-mib": "refused: a sane file-size cap (the spec only recommends small skills)",
    "skill-md-links-out": "refused: nothing outside the skills root is ever read",
    "tags-extension": "loaded: `tags` is our documented extension",
    "allowed-tools-list": "loaded: a YAML list of tools is read as the same list",
}

REFERENCE_DIFFERS = {
    # Where skills-ref 0.1.1 judges otherwise than we do, and why we keep our verdict.
    "dashes-in-a-value": "skills-ref splits the file on the first '---' anywhere",
    "byte-order-mark": "skills-ref reads a UTF-8 BOM as text before the opening fence",
    "over-1-mib": "our file-size cap (OURS_DIFFER)",
    "skill-md-links-out": "our confinement (OURS_DIFFER)",
    "tags-extension": "skills-ref refuses every key outside the spec",
    "empty-compatibility": "the spec says 1-500 characters when given; skills-ref checks <= 500",
    "nested-metadata": "the spec says string values; skills-ref turns any value into text",
    "list-metadata": "the spec says string values; skills-ref turns any value into text",
}
