"""The model wire the history property plays over: the Anthropic fake with the Anthropic
provider, or the OpenAI-compatible fake (in one of its dialects) with the OpenAI
provider. A wire turns the scenario's steps (blocks, failures, hangs) into the fake's
replies, builds the provider the runtime uses, and names any request the real API
would refuse."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from tests.fakes import anthropic_api as claude
from tests.fakes import openai_api as compat
from tests.fakes.anthropic_api import AnthropicFake, RecordedRequest, TextOut, ToolUseOut
from tests.fakes.anthropic_rules import check_request as anthropic_problem
from tests.fakes.openai_api import OpenAIFake
from tests.fakes.openai_rules import check_request as openai_problem
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.providers.base import ModelProvider
from thalos_bot.providers.openai import OpenAIProvider
from thalos_bot.runtime.compaction import SUMMARY_INSTRUCTIONS

FailureKind = Literal["429", "529", "500", "drop", "error_event"]
Block = TextOut | ToolUseOut


class Wire(Protocol):
    @property
    def fake(self) -> Any: ...

    def reply(self, *blocks: Block) -> Any: ...

    def failure(self, kind: FailureKind, partial: str) -> Any: ...

    def hang(self, partial: str) -> Any: ...

    def provider(self) -> ModelProvider: ...

    def model_requests(self) -> Sequence[RecordedRequest]: ...

    def problem(self, body: object) -> str | None: ...


class AnthropicWire:
    def __init__(self, fake: AnthropicFake) -> None:
        self._fake = fake

    @property
    def fake(self) -> AnthropicFake:
        return self._fake

    def reply(self, *blocks: Block) -> Any:
        return claude.reply(*blocks)

    def failure(self, kind: FailureKind, partial: str) -> Any:
        if kind == "429":
            return claude.api_error(429, "rate_limit_error")
        if kind == "529":
            return claude.overloaded()
        if kind == "500":
            return claude.api_error(500, "api_error")
        if kind == "drop":
            return claude.drop_mid_stream(after_text=partial)
        return claude.error_mid_stream(after_text=partial)

    def hang(self, partial: str) -> Any:
        return claude.hang_mid_stream(after_text=partial)

    def provider(self) -> ModelProvider:
        return AnthropicProvider(api_key="sk-ant-test", base_url=self._fake.base_url, max_retries=0)

    def model_requests(self) -> Sequence[RecordedRequest]:
        return self._fake.requests

    def problem(self, body: object) -> str | None:
        return anthropic_problem(body)


def is_summary(request: RecordedRequest) -> bool:
    messages = request.body.get("messages") if isinstance(request.body, dict) else None
    first = messages[0] if isinstance(messages, list) and messages else {}
    content = first.get("content") if isinstance(first, dict) else None
    return isinstance(content, str) and content.startswith(SUMMARY_INSTRUCTIONS[:60])


class OpenAIWire:
    """Compaction's summary calls are answered outside the scenario's queue (servers
    that report no usage are measured by our estimate, which compacts in earnest)."""

    def __init__(self, fake: OpenAIFake) -> None:
        self._fake = fake
        fake.answer_always(is_summary, compat.reply(claude.text("The summary so far.")))

    @property
    def fake(self) -> OpenAIFake:
        return self._fake

    def reply(self, *blocks: Block) -> Any:
        return compat.reply(*blocks)

    def failure(self, kind: FailureKind, partial: str) -> Any:
        if kind in ("429", "529", "500"):
            return compat.api_error(int(kind))
        if kind == "drop":
            return compat.drop_mid_stream(after_text=partial)
        return compat.error_mid_stream(after_text=partial)

    def hang(self, partial: str) -> Any:
        return compat.hang_mid_stream(after_text=partial)

    def provider(self) -> ModelProvider:
        return OpenAIProvider(
            label="local", base_url=self._fake.base_url, api_key=None, max_retries=0
        )

    def model_requests(self) -> Sequence[RecordedRequest]:
        return self._fake.completions

    def problem(self, body: object) -> str | None:
        found = openai_problem(body, max_completion_tokens=self._fake.model.max_completion_tokens)
        return None if found is None else found.message
