"""The frontmatter block of a skill file: the ``---`` fences and the YAML between them.

The YAML loader is PyYAML's safe loader made stricter, in the ways the Agent Skills
reference validator (which reads YAML with ``strictyaml``) is strict: a key given twice
is an error (PyYAML keeps the last one silently), anchors, aliases and explicit tags
(``!!int``) are refused (a small file must not expand into a large object graph), and
every plain scalar is text: ``version: 1.10`` is ``"1.10"``, ``draft: no`` is ``"no"``,
an empty value is ``""``. Unlike ``strictyaml``, flow collections (``[a, b]``) are
allowed: they are plain YAML, and our ``tags`` extension is documented with them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node

_FENCE = re.compile(r"^---[ \t]*$")


class FrontmatterError(ValueError):
    """The block is not well formed: missing or unterminated fences, bad YAML, a duplicate
    key. ``line`` is the 1-based line in the file, when known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(f"{reason} (line {line})" if line is not None else reason)


@dataclass(frozen=True, slots=True)
class SplitDocument:
    frontmatter: str
    """The YAML text between the fences."""
    body: str
    """Everything after the closing fence line, verbatim."""


def normalise_newlines(text: str) -> str:
    """CRLF and lone CR become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_frontmatter(text: str) -> SplitDocument:
    """Split LF-normalised ``text`` into its frontmatter and body.

    The first line must be ``---``; the block ends at the next line that is ``---``
    (trailing spaces allowed on both).
    """
    lines = text.split("\n")
    if not _FENCE.match(lines[0]):
        raise FrontmatterError(
            "missing '---' fence: a skill file must start with a '---' line that opens "
            "its frontmatter"
        )
    for index in range(1, len(lines)):
        if _FENCE.match(lines[index]):
            return SplitDocument(
                frontmatter="\n".join(lines[1:index]),
                body="\n".join(lines[index + 1 :]),
            )
    raise FrontmatterError("unterminated frontmatter: no closing '---' fence", 1)


class _StrictLoader(yaml.SafeLoader):
    """Safe loading, plus: duplicate keys, anchors, aliases and tags fail; scalars are text."""

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        mark = event.start_mark
        line = mark.line + 1 if mark else None
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise FrontmatterError("YAML anchors and aliases are not allowed", line)
        if getattr(event, "tag", None) not in (None, "!"):
            raise FrontmatterError("YAML tags (such as '!!int') are not allowed", line)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, "expected a mapping", node.start_mark)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                seen = key in mapping
            except TypeError:
                raise FrontmatterError(
                    "a key must be a plain value, not a list or a map",
                    key_node.start_mark.line + 1,
                ) from None
            if seen:
                raise FrontmatterError(f"duplicate key {key!r}", key_node.start_mark.line + 1)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


_StrictLoader.yaml_implicit_resolvers = {}  # no bool, int, float, null, date: all text


def _construct_map(loader: _StrictLoader, node: Node) -> dict[Any, Any]:
    if not isinstance(node, MappingNode):
        raise ConstructorError(None, None, "expected a mapping", node.start_mark)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def load_frontmatter(source: str, first_line: int = 2) -> dict[Any, Any]:
    """The YAML mapping in ``source`` (an empty block is an empty mapping). ``first_line``
    is the file line ``source`` starts on, so errors point into the file."""
    offset = first_line - 1
    try:
        data = yaml.load(source, Loader=_StrictLoader)  # noqa: S506 - a strict SafeLoader
    except FrontmatterError as exc:
        raise FrontmatterError(
            exc.reason, exc.line + offset if exc.line is not None else None
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "not valid YAML"
        raise FrontmatterError(
            f"the frontmatter is not valid YAML: {problem}",
            mark.line + 1 + offset if mark is not None else None,
        ) from None
    except yaml.YAMLError:
        raise FrontmatterError("the frontmatter is not valid YAML") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError("the frontmatter must be a map of keys to values", first_line)
    return data
