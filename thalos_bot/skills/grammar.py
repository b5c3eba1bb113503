"""The skill file grammar: from a path (or bytes) to a :class:`SkillDocument`, or a
:class:`SkillLoadError` listing every problem of the file.

The frontmatter follows the Agent Skills specification (``name``, ``description``,
``license``, ``compatibility``, ``metadata``, ``allowed-tools``) plus our ``tags``, so a
skill written for another agent loads here unchanged. The rules are the spec's, checked
the way its reference validator (``skills-ref``) checks them; where we differ, the
conformance test lists why.

A file that cannot be read as frontmatter (no fences, not UTF-8, not YAML) has one
problem; otherwise every field is checked and every problem reported.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import stat
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from thalos_bot.skills.document import (
    MAX_COMPATIBILITY_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_FILE_BYTES,
    MAX_NAME_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    RECOMMENDED_MAX_LINES,
    RECOMMENDED_MAX_TOKENS,
    Problem,
    SkillDocument,
    SkillLoadError,
)
from thalos_bot.skills.frontmatter import (
    FrontmatterError,
    load_frontmatter,
    normalise_newlines,
    split_frontmatter,
)

SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
KNOWN_KEYS = (*SPEC_KEYS, "tags")


@dataclass(frozen=True, slots=True)
class GrammarOptions:
    allow_unknown_keys: bool = False


@dataclass(frozen=True, slots=True)
class SkillCandidate:
    """A file the scan found: ``<root>/<folder>/SKILL.md`` or ``<root>/<file>.md``.
    ``expected_name`` is the folder name or the file name without ``.md``; ``folder`` is
    the real path of the skill folder (None for a single file)."""

    path: Path
    expected_name: str
    form: Literal["folder", "file"]
    folder: Path | None = None

    @property
    def origin(self) -> str:
        """How the name was given, for error texts."""
        if self.form == "folder":
            return f"its folder name {self.expected_name!r}"
        return f"its file name {self.path.name!r}"


def _size_text(size: int) -> str:
    return f"{size:,} bytes"


def _too_large(path: Path, size: int | None) -> SkillLoadError:
    shown = f"{_size_text(size)}; " if size is not None else ""
    return SkillLoadError.single(
        path, f"the file is too large ({shown}at most {_size_text(MAX_FILE_BYTES)}, 1 MiB)"
    )


def read_skill(candidate: SkillCandidate, options: GrammarOptions | None = None) -> SkillDocument:
    """Read and parse one skill file.

    A file over :data:`MAX_FILE_BYTES` is refused from ``stat`` alone: it is never opened.
    """
    path = candidate.path
    try:
        info = path.stat()
    except OSError as exc:
        raise SkillLoadError.single(
            path, f"cannot be read ({exc.strerror or 'I/O error'})"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise SkillLoadError.single(path, "is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise _too_large(path, info.st_size)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SkillLoadError.single(
            path, f"cannot be read ({exc.strerror or 'I/O error'})"
        ) from None
    if len(raw) > MAX_FILE_BYTES:  # it grew after the stat
        raise _too_large(path, None)
    return parse_skill(raw, candidate, options)


def parse_skill(
    raw: bytes, candidate: SkillCandidate, options: GrammarOptions | None = None
) -> SkillDocument:
    """Parse the bytes of a skill file found as ``candidate``."""
    path = candidate.path
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkillLoadError.single(path, "is not UTF-8 text") from None
    text = normalise_newlines(text)
    try:
        split = split_frontmatter(text)
        fields = load_frontmatter(split.frontmatter)
    except FrontmatterError as exc:
        raise SkillLoadError.single(path, str(exc)) from None
    checker = _Fields(fields, candidate, options or GrammarOptions())
    doc = checker.document(split.body, digest, _advice(text, split.body))
    if checker.problems:
        raise SkillLoadError(path, checker.problems)
    assert doc is not None
    return doc


def _advice(text: str, body: str) -> tuple[str, ...]:
    """The spec's size recommendations, as warnings."""
    advice: list[str] = []
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines > RECOMMENDED_MAX_LINES:
        advice.append(
            f"the file has {lines:,} lines; the Agent Skills specification recommends "
            f"under {RECOMMENDED_MAX_LINES} (move detail into references/ files)"
        )
    tokens = math.ceil(len(body) / 4)
    if tokens > RECOMMENDED_MAX_TOKENS:
        advice.append(
            f"the body is about {tokens:,} tokens; the Agent Skills specification "
            f"recommends under {RECOMMENDED_MAX_TOKENS:,} (move detail into references/ files)"
        )
    return tuple(advice)


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


def name_problems(name: str) -> list[str]:
    """What is wrong with ``name`` (already NFKC-normalised and stripped) as a skill
    name: 1 to 64 lower-case letters, digits and hyphens, no hyphen at either end and
    none doubled. Letters and digits are Unicode ones, as in the reference validator."""
    problems: list[str] = []
    if len(name) > MAX_NAME_CHARS:
        problems.append(f"at most {MAX_NAME_CHARS} characters (it has {len(name)})")
    if name != name.lower():
        problems.append(f"{name!r} must be lower-case")
    if name.startswith("-") or name.endswith("-"):
        problems.append(f"{name!r} must not start or end with '-'")
    if "--" in name:
        problems.append(f"{name!r} must not contain '--'")
    bad = sorted({c for c in name if not (c.isalnum() or c == "-")})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        problems.append(f"{name!r} may hold only letters, digits and '-' (not {shown})")
    return problems


class _Fields:
    """Checks every frontmatter field, collecting problems instead of stopping."""

    def __init__(
        self, fields: Mapping[Any, Any], candidate: SkillCandidate, options: GrammarOptions
    ) -> None:
        self.fields = fields
        self.candidate = candidate
        self.options = options
        self.problems: list[Problem] = []

    def fail(self, reason: str, key: str | None = None) -> None:
        self.problems.append(Problem(reason, key))

    def document(self, body: str, digest: str, advice: tuple[str, ...]) -> SkillDocument | None:
        self._keys()
        name = self._name()
        description = self._description()
        license_ = self._optional_text("license")
        compatibility = self._optional_text("compatibility", MAX_COMPATIBILITY_CHARS, nonempty=True)
        metadata = self._metadata()
        allowed_tools = self._allowed_tools()
        tags = self._tags()
        if self.problems or name is None or description is None:
            return None
        return SkillDocument(
            name=name,
            description=description,
            body=body,
            path=self.candidate.path,
            sha256=digest,
            license=license_,
            compatibility=compatibility,
            metadata=metadata,
            allowed_tools=allowed_tools,
            tags=tags,
            folder=self.candidate.folder,
            warnings=advice,
        )

    def _keys(self) -> None:
        for key in self.fields:
            if not isinstance(key, str):
                self.fail(f"frontmatter keys must be text, not {key!r}")
            elif key not in KNOWN_KEYS and not self.options.allow_unknown_keys:
                hint = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6)
                self.fail("unknown key" + (f" (did you mean {hint[0]!r}?)" if hint else ""), key)

    def _text(self, key: str, *, required: bool) -> str | None:
        """The raw text of ``key`` (None when absent or not text, with the problem noted)."""
        if key not in self.fields:
            if required:
                self.fail("required", key)
            return None
        value = self.fields[key]
        if not isinstance(value, str):
            self.fail(f"must be text, not {_kind(value)}", key)
            return None
        if required and not value.strip():
            self.fail("must not be empty", key)
            return None
        return value

    def _name(self) -> str | None:
        raw = self._text("name", required=True)
        if raw is None:
            return None
        name = unicodedata.normalize("NFKC", raw.strip())
        for problem in name_problems(name):
            self.fail(problem, "name")
        expected = unicodedata.normalize("NFKC", self.candidate.expected_name)
        if name != expected:
            self.fail(f"{name!r} disagrees with {self.candidate.origin}", "name")
        return name

    def _description(self) -> str | None:
        raw = self._text("description", required=True)
        if raw is None:
            return None
        if len(raw) > MAX_DESCRIPTION_CHARS:
            self.fail(
                f"at most {MAX_DESCRIPTION_CHARS} characters (it has {len(raw)})", "description"
            )
        return raw.strip()

    def _optional_text(
        self, key: str, limit: int | None = None, *, nonempty: bool = False
    ) -> str | None:
        raw = self._text(key, required=False)
        if raw is None:
            return None
        if nonempty and not raw.strip():
            self.fail(f"must not be empty when given (1 to {limit} characters)", key)
        if limit is not None and len(raw) > limit:
            self.fail(f"at most {limit} characters (it has {len(raw)})", key)
        return raw.strip() or None

    def _metadata(self) -> Mapping[str, str]:
        value = self.fields.get("metadata")
        if value is None or value == "":
            return MappingProxyType({})
        if not isinstance(value, dict):
            self.fail(f"must be a map, not {_kind(value)}", "metadata")
            return MappingProxyType({})
        out: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.fail(f"keys must be text, not {key!r}", "metadata")
            elif not isinstance(item, str):
                self.fail(f"must be text, not {_kind(item)}", f"metadata.{key}")
            else:
                out[key] = item
        return MappingProxyType(out)

    def _allowed_tools(self) -> tuple[str, ...]:
        value = self.fields.get("allowed-tools")
        if value is None:
            return ()
        if isinstance(value, str):
            return split_tools(value)
        if isinstance(value, list):
            tools: list[str] = []
            for index, item in enumerate(value):
                if not isinstance(item, str) or not item.strip():
                    self.fail("must be non-empty text", f"allowed-tools[{index}]")
                else:
                    tools.append(item.strip())
            return tuple(tools)
        self.fail(f"must be text (space-separated) or a list, not {_kind(value)}", "allowed-tools")
        return ()

    def _tags(self) -> tuple[str, ...]:
        value = self.fields.get("tags")
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(f"must be a list, not {_kind(value)}", "tags")
            return ()
        tags: dict[str, None] = {}
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(f"must be text, not {_kind(item)}", f"tags[{index}]")
                continue
            tag = item.strip().lower()
            if not tag:
                self.fail("must not be empty", f"tags[{index}]")
            elif len(tag) > MAX_TAG_CHARS:
                self.fail(f"at most {MAX_TAG_CHARS} characters", f"tags[{index}]")
            else:
                tags[tag] = None
        if len(tags) > MAX_TAGS:
            self.fail(f"at most {MAX_TAGS} tags (it has {len(tags)})", "tags")
        return tuple(tags)


def split_tools(text: str) -> tuple[str, ...]:
    """``allowed-tools`` text split on spaces (and commas) outside parentheses:
    ``Bash(git add:*) Read, Grep`` is ``Bash(git add:*)``, ``Read``, ``Grep``."""
    tools: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (char.isspace() or char == ","):
            if current:
                tools.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        tools.append("".join(current))
    return tuple(tools)
