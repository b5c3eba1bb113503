"""What a skill file becomes once it has passed the grammar, and what a failure says.

A skill is a document the model reads, not a workflow the framework runs: a name and a
description the agent always sees, a body it loads when the skill applies, and, for a
skill folder, the files next to its ``SKILL.md`` that the body refers to.

The limits are those of the Agent Skills specification (agentskills.io); the only ones
of our own are the file-size cap and the ``tags`` extension.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
MAX_TAGS = 10
MAX_TAG_CHARS = 32
MAX_FILE_BYTES = 1024 * 1024
"""A skill file at most 1 MiB; a larger file is refused from its size alone."""
RECOMMENDED_MAX_LINES = 500
"""The specification recommends keeping ``SKILL.md`` under 500 lines ..."""
RECOMMENDED_MAX_TOKENS = 5000
"""... and its body under about 5,000 tokens (estimated here as characters / 4)."""

SKILL_FILE = "SKILL.md"
"""The file inside a skill folder: ``<root>/<name>/SKILL.md``."""
SKILL_FILE_LOWER = "skill.md"
"""Accepted in a folder without a ``SKILL.md``, as the reference validator does."""
SKILL_SUFFIX = ".md"
"""A single-file skill: ``<root>/<name>.md`` (our extension; it has no folder)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a skill file; ``key`` names the frontmatter key at fault."""

    reason: str
    key: str | None = None

    def describe(self) -> str:
        return f"{self.key}: {self.reason}" if self.key else self.reason


class SkillLoadError(Exception):
    """``path`` is not a valid skill, for every reason in ``problems`` (at least one).
    ``str()`` reads ``path: key: reason``, one line per problem."""

    def __init__(self, path: Path, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("a load error needs at least one problem")
        self.path = path
        self.problems = tuple(problems)
        super().__init__(self.describe())

    @classmethod
    def single(cls, path: Path, reason: str, key: str | None = None) -> SkillLoadError:
        return cls(path, [Problem(reason, key)])

    @property
    def reason(self) -> str:
        """The first problem's reason."""
        return self.problems[0].reason

    @property
    def key(self) -> str | None:
        """The first problem's key."""
        return self.problems[0].key

    def lines(self, label: str | None = None) -> list[str]:
        where = label if label is not None else str(self.path)
        return [f"{where}: {problem.describe()}" for problem in self.problems]

    def describe(self, label: str | None = None) -> str:
        return "\n".join(self.lines(label))


@dataclass(frozen=True, slots=True)
class SkillDocument:
    """A valid skill file. ``body`` is verbatim with LF line endings; ``sha256`` is the
    hex digest of the file's bytes as read. ``folder`` is the real path of the skill's
    folder (its resources live there), None for a single-file skill."""

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
    folder: Path | None = None
    warnings: tuple[str, ...] = ()
    """Advice that does not stop the skill loading (the spec's size recommendations)."""


@dataclass(frozen=True, slots=True)
class SkillSummary:
    """What the catalogue and search show of a skill: never its body."""

    name: str
    description: str
