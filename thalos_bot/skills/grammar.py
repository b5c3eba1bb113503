"""The skill file grammar: from a path (or bytes) to a :class:`SkillDocument`, or a
:class:`SkillLoadError` naming the file and the reason.

The frontmatter follows the public Agent Skills format (``name``, ``description``,
``license``, ``compatibility``, ``metadata``, ``allowed-tools``) plus ``tags``, so a skill
written for another agent loads here unchanged.
"""

from __future__ import annotations

import difflib
import hashlib
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from thalos_bot.skills.document import (
    MAX_BODY_BYTES,
    MAX_COMPATIBILITY_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_FILE_BYTES,
    MAX_LICENSE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    NAME_PATTERN,
    SkillDocument,
    SkillLoadError,
)
from thalos_bot.skills.frontmatter import (
    FrontmatterError,
    load_frontmatter,
    normalise_newlines,
    split_frontmatter,
)

KNOWN_KEYS = (
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
    "tags",
)


@dataclass(frozen=True, slots=True)
class GrammarOptions:
    allow_unknown_keys: bool = False


@dataclass(frozen=True, slots=True)
class SkillCandidate:
    """A file the scan found: ``<root>/<folder>/SKILL.md`` or ``<root>/<file>.md``.
    ``expected_name`` is the folder name or the file name without ``.md``."""

    path: Path
    expected_name: str
    form: Literal["folder", "file"]

    @property
    def origin(self) -> str:
        """How the name was given, for error texts."""
        if self.form == "folder":
            return f"its folder name {self.expected_name!r}"
        return f"its file name {self.path.name!r}"


def _size_text(size: int) -> str:
    return f"{size:,} bytes"


def read_skill(candidate: SkillCandidate, options: GrammarOptions | None = None) -> SkillDocument:
    """Read and parse one skill file.

    A file over :data:`MAX_FILE_BYTES` is refused from ``stat`` alone: it is never opened.
    """
    path = candidate.path
    try:
        info = path.stat()
    except OSError as exc:
        raise SkillLoadError(path, f"cannot be read ({exc.strerror or 'I/O error'})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SkillLoadError(path, "is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise SkillLoadError(
            path,
            f"the file is too large ({_size_text(info.st_size)}; "
            f"at most {_size_text(MAX_FILE_BYTES)}, 256 KiB)",
        )
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SkillLoadError(path, f"cannot be read ({exc.strerror or 'I/O error'})") from None
    if len(raw) > MAX_FILE_BYTES:  # it grew after the stat
        raise SkillLoadError(
            path, f"the file is too large (at most {_size_text(MAX_FILE_BYTES)}, 256 KiB)"
        )
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
        raise SkillLoadError(path, "is not UTF-8 text") from None
    try:
        split = split_frontmatter(normalise_newlines(text))
        fields = load_frontmatter(split.frontmatter)
    except FrontmatterError as exc:
        raise SkillLoadError(path, str(exc)) from None
    body_bytes = len(split.body.encode("utf-8"))
    if body_bytes > MAX_BODY_BYTES:
        raise SkillLoadError(
            path,
            f"the body is too large ({_size_text(body_bytes)}; "
            f"at most {_size_text(MAX_BODY_BYTES)}, 64 KiB)",
        )
    return _document(fields, split.body, digest, candidate, options or GrammarOptions())


def _document(
    fields: Mapping[Any, Any],
    body: str,
    digest: str,
    candidate: SkillCandidate,
    options: GrammarOptions,
) -> SkillDocument:
    path = candidate.path
    for key in fields:
        if not isinstance(key, str):
            raise SkillLoadError(path, f"frontmatter keys must be text, not {key!r}")
        if key not in KNOWN_KEYS and not options.allow_unknown_keys:
            hint = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6)
            raise SkillLoadError(
                path, "unknown key" + (f" (did you mean {hint[0]!r}?)" if hint else ""), key
            )

    name = _text(fields, "name", path, required=True)
    if not NAME_PATTERN.match(name):
        raise SkillLoadError(
            path,
            f"{name!r} is not a skill name: 1 to 64 lower-case letters, digits, '-' or '_', "
            "starting with a letter",
            "name",
        )
    if name.casefold() != candidate.expected_name.casefold():
        raise SkillLoadError(path, f"{name!r} disagrees with {candidate.origin}", "name")

    description = _text(fields, "description", path, required=True, limit=MAX_DESCRIPTION_CHARS)
    license_ = _optional_text(fields, "license", path, MAX_LICENSE_CHARS)
    compatibility = _optional_text(fields, "compatibility", path, MAX_COMPATIBILITY_CHARS)
    return SkillDocument(
        name=name,
        description=description,
        body=body,
        path=path,
        sha256=digest,
        license=license_,
        compatibility=compatibility,
        metadata=_metadata(fields.get("metadata"), path),
        allowed_tools=_allowed_tools(fields.get("allowed-tools"), path),
        tags=_tags(fields.get("tags"), path),
    )


def _text(
    fields: Mapping[Any, Any], key: str, path: Path, *, required: bool, limit: int | None = None
) -> str:
    value = fields.get(key)
    if value is None:
        if required:
            raise SkillLoadError(path, "required", key)
        return ""
    if not isinstance(value, str):
        raise SkillLoadError(path, f"must be text, not {_kind(value)}", key)
    value = value.strip()
    if required and not value:
        raise SkillLoadError(path, "must not be empty", key)
    if limit is not None and len(value) > limit:
        raise SkillLoadError(path, f"at most {limit} characters (it has {len(value)})", key)
    return value


def _optional_text(fields: Mapping[Any, Any], key: str, path: Path, limit: int) -> str | None:
    value = _text(fields, key, path, required=False, limit=limit)
    return value or None


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


def _metadata(value: Any, path: Path) -> Mapping[str, str]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, dict):
        raise SkillLoadError(path, f"must be a map, not {_kind(value)}", "metadata")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise SkillLoadError(path, f"keys must be text, not {key!r}", "metadata")
        if isinstance(item, bool):
            out[key] = "true" if item else "false"
        elif isinstance(item, str | int | float):
            out[key] = str(item)
        else:
            raise SkillLoadError(path, f"must be text, not {_kind(item)}", f"metadata.{key}")
    return MappingProxyType(out)


def _allowed_tools(value: Any, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list):
        tools: list[str] = []
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise SkillLoadError(path, "must be non-empty text", f"allowed-tools[{index}]")
            tools.append(item.strip())
        return tuple(tools)
    raise SkillLoadError(
        path, f"must be text (space-separated) or a list, not {_kind(value)}", "allowed-tools"
    )


def _tags(value: Any, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SkillLoadError(path, f"must be a list, not {_kind(value)}", "tags")
    tags: dict[str, None] = {}
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise SkillLoadError(path, f"must be text, not {_kind(item)}", f"tags[{index}]")
        tag = item.strip().lower()
        if not tag:
            raise SkillLoadError(path, "must not be empty", f"tags[{index}]")
        if len(tag) > MAX_TAG_CHARS:
            raise SkillLoadError(path, f"at most {MAX_TAG_CHARS} characters", f"tags[{index}]")
        tags[tag] = None
    if len(tags) > MAX_TAGS:
        raise SkillLoadError(path, f"at most {MAX_TAGS} tags (it has {len(tags)})", "tags")
    return tuple(tags)
