"""What a skill file becomes once it has passed the grammar, and what a failure says.

A skill is a document the model reads, not a workflow the framework runs: a name and a
one-line description the agent always sees, and a body it loads when the skill applies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
"""A skill name: lower-case letters, digits, '-' or '_', starting with a letter."""

MAX_DESCRIPTION_CHARS = 300
MAX_TAGS = 10
MAX_TAG_CHARS = 32
MAX_LICENSE_CHARS = 500
MAX_COMPATIBILITY_CHARS = 500
MAX_BODY_BYTES = 64 * 1024
"""The body (after the frontmatter, UTF-8, line endings normalised) at most 64 KiB."""
MAX_FILE_BYTES = 256 * 1024
"""The whole file at most 256 KiB; a larger file is refused from its size alone."""

SKILL_FILE = "SKILL.md"
"""The file inside a skill folder: ``<root>/<name>/SKILL.md``."""
SKILL_SUFFIX = ".md"
"""A single-file skill: ``<root>/<name>.md``."""


class SkillLoadError(Exception):
    """``path`` is not a valid skill, for ``reason``; ``key`` names the frontmatter key at
    fault, when there is one. ``str()`` reads ``path: key: reason``."""

    def __init__(self, path: Path, reason: str, key: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.key = key
        super().__init__(self.describe())

    def describe(self, label: str | None = None) -> str:
        where = label if label is not None else str(self.path)
        return f"{where}: {self.key}: {self.reason}" if self.key else f"{where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class SkillDocument:
    """A valid skill file. ``body`` is verbatim with LF line endings; ``sha256`` is the
    hex digest of the file's bytes as read."""

    name: str
    description: str
    body: str
    path: Path
    sha256: str
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    allowed_tools: tuple[str, ...] = ()
    """Parsed for compatibility with the Agent Skills format; not enforced here."""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SkillSummary:
    """What the catalogue and search show of a skill: never its body."""

    name: str
    description: str
