"""A tool source that returns what a test tells it to (a web page, a file)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult


class CannedSource:
    """``web__get`` returns ``pages[url]``."""

    def __init__(self, pages: Mapping[str, str], name: str = "web") -> None:
        self.pages = dict(pages)
        self._name = name
        self.calls: list[Mapping[str, Any]] = []

    @property
    def name(self) -> str:
        return self._name

    def tools(self) -> Sequence[SourceTool]:
        schema = {"type": "object", "properties": {"url": {"type": "string"}}}
        return (SourceTool("get", "Fetch a page.", schema),)

    def status(self) -> SourceStatus:
        return SourceStatus("ready", 1)

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult(self.pages[str(arguments["url"])])
