"""The OpenAI-compatible model provider: one streamed Chat Completions call through the
official ``openai`` SDK, pointed at any server with ``base_url`` (OpenAI, OpenRouter,
Ollama, llama.cpp, vLLM, LM Studio).

Text deltas come out at once; tool calls are assembled from their ``delta.tool_calls``
fragments (by ``index``) and emitted once the response is complete; usage comes from the
usage chunk ``stream_options.include_usage`` asks for (or on the finish chunk, as
llama.cpp sends it), and when a server sends none it is counted from the characters and
marked as an estimate. Tool-call ids are ours (``call_`` and 24 hex digits): servers
leave them out, repeat them, or reuse them across responses, and only our history reads
them. The context window is the configured one, or what the server publishes
(:mod:`thalos_bot.providers.discovery`), or learned from a too-long refusal; unknown
until then.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import openai
import structlog

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.messages import Block, Message, TextBlock, ToolUseBlock
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelRequest,
    ModelTextDelta,
    ModelToolUse,
    ModelUsage,
    ProviderError,
)
from thalos_bot.providers.discovery import discover_window
from thalos_bot.providers.openai_mapping import (
    CUT_OFF,
    NO_API_KEY,
    UNREADABLE,
    message_params,
    provider_error,
    system_message,
    tool_params,
)

log = structlog.get_logger(__name__)

_CLOSE_GRACE_S = 1.0
NO_KEY = "no-key"
"""Sent as the bearer token to a server configured without a key (a local server)."""
CHARS_PER_TOKEN = 4
_COMPLETION_TOKENS = re.compile(r"'max_tokens' is not supported.*max_completion_tokens", re.DOTALL)
_NO_TOOLS = re.compile(r"does not support tools|tools? (?:are|is) not supported", re.IGNORECASE)
_STOP = {"tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}


def new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


@dataclass(slots=True)
class _Call:
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _Assembly:
    """Chunks in, model events and the final assistant message out."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: dict[int, _Call] = {}
        self.finish: str | None = None
        self.usage: TokenUsage | None = None

    def feed(self, chunk: Any) -> list[ModelEvent]:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = _usage(usage)
        out: list[ModelEvent] = []
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) != 0:
                continue
            delta = choice.delta
            if delta is not None and delta.content:
                self.text += delta.content
                out.append(ModelTextDelta(delta.content))
            for fragment in (delta.tool_calls if delta is not None else None) or ():
                call = self.calls.setdefault(fragment.index, _Call())
                function = fragment.function
                if function is not None:
                    if function.name:
                        call.name = call.name or function.name
                    if function.arguments:
                        call.arguments.append(function.arguments)
            if choice.finish_reason:
                self.finish = choice.finish_reason
        return out

    def blocks(self) -> list[Block]:
        blocks: list[Block] = [TextBlock(self.text)] if self.text else []
        for _, call in sorted(self.calls.items()):
            if not call.name:
                log.warning("openai_tool_call_without_name")
                raise ProviderError(UNREADABLE, retryable=True)
            raw = "".join(call.arguments).strip()
            parsed = json.loads(raw) if raw else {}
            if not isinstance(parsed, dict):
                log.warning("openai_tool_arguments_not_an_object", tool=call.name)
                raise ProviderError(UNREADABLE, retryable=True)
            blocks.append(ToolUseBlock(new_call_id(), call.name, parsed))
        return blocks


def _usage(usage: Any) -> TokenUsage:
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    output = int(getattr(usage, "completion_tokens", 0) or 0)
    return TokenUsage(max(0, prompt - cached), output, min(cached, prompt), 0)


def _estimate(body: dict[str, Any], text: str, blocks: list[Block]) -> TokenUsage:
    prompt = len(json.dumps(body.get("messages", []), ensure_ascii=False))
    prompt += len(json.dumps(body.get("tools", []), ensure_ascii=False))
    output = len(text) + sum(
        len(json.dumps(dict(b.input))) for b in blocks if isinstance(b, ToolUseBlock)
    )
    return TokenUsage(
        max(1, prompt // CHARS_PER_TOKEN), max(1, output // CHARS_PER_TOKEN) if output else 0
    )


class OpenAIProvider:
    """:class:`~thalos_bot.providers.base.ModelProvider` over ``openai.AsyncOpenAI``.

    ``label`` names the provider in what users read (its id in ``bot.toml``). With
    ``key_env`` set and the variable empty, every call fails naming it, without touching
    the network. The SDK retries 408/409/429/5xx and connection errors ``max_retries``
    times.
    """

    name = "openai"

    def __init__(
        self,
        *,
        label: str,
        base_url: str | None,
        api_key: str | None,
        key_env: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        vision: bool = True,
        tools: bool = True,
        context_window: int | None = None,
    ) -> None:
        self.label = label
        self.base_url = base_url
        self.vision = vision
        self.tools = tools
        self._key_env = key_env
        self._configured_window = context_window
        self._windows: dict[str, int | None] = {}
        self._toolless: set[str] = set()
        self._completion_tokens: set[str] = set()
        """Models that take ``max_completion_tokens`` instead of ``max_tokens``."""
        """Models whose server said they do not support tools (asked without since)."""
        self._client: openai.AsyncOpenAI | None = None
        if api_key or key_env is None:
            self._client = openai.AsyncOpenAI(
                api_key=api_key or NO_KEY,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
            )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    # -- the context window --

    def known_window(self, model: str) -> int | None:
        """The window in force for ``model`` now, without asking (None: unknown)."""
        return self._configured_window or self._windows.get(model)

    async def context_window(self, model: str) -> int | None:
        """Configured, else published by the server (asked once), else learned."""
        if self._configured_window is not None:
            return self._configured_window
        if model not in self._windows:
            found = await discover_window(self.base_url, model) if self.base_url else None
            self._windows[model] = found
            log.info("context_window_discovered", provider=self.label, model=model, window=found)
        return self._windows[model]

    def learn_window(self, model: str, window: int) -> None:
        """A too-long refusal taught us (at most) this window."""
        if self._configured_window is None:
            known = self._windows.get(model)
            self._windows[model] = window if known is None else min(known, window)

    # -- one call --

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        messages = message_params(request.messages, request.media, vision=self.vision)
        system = system_message(request.system)
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [system, *messages] if system else messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        limit = (
            "max_completion_tokens" if request.model in self._completion_tokens else "max_tokens"
        )
        body[limit] = request.max_output_tokens
        offered = self.tools and request.model not in self._toolless
        tools = tool_params(request.tools) if offered else []
        if tools:
            body["tools"] = tools
            if not request.allow_tools:
                body["tool_choice"] = "none"
        return body

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        if self._client is None:
            raise ProviderError(NO_API_KEY.format(env=self._key_env))
        body = self.body(request)
        assembly = _Assembly()
        try:
            raw = await self._create(body)
        except openai.OpenAIError as err:
            raise self._failed(err, request) from err
        try:
            async for chunk in raw:
                for out in assembly.feed(chunk):
                    yield out
        except openai.APIConnectionError as err:  # the server went away mid-answer
            raise self._failed(httpx2.ReadError(str(err)), request) from err
        except (openai.OpenAIError, httpx2.HTTPError) as err:
            raise self._failed(err, request) from err
        finally:
            with anyio.move_on_after(_CLOSE_GRACE_S, shield=True):
                await raw.close()
        if assembly.finish is None:
            log.warning("openai_stream_incomplete", provider=self.label, model=request.model)
            raise ProviderError(CUT_OFF, retryable=True)
        try:
            blocks = assembly.blocks()
        except json.JSONDecodeError as err:
            raise self._failed(err, request) from err
        for block in blocks:
            if isinstance(block, ToolUseBlock):
                yield ModelToolUse(block)
        if assembly.usage is not None:
            yield ModelUsage(assembly.usage)
        else:
            log.info("openai_usage_estimated", provider=self.label, model=request.model)
            yield ModelUsage(_estimate(body, assembly.text, blocks), estimated=True)
        called = any(isinstance(b, ToolUseBlock) for b in blocks)
        stop = "tool_use" if called else _STOP.get(assembly.finish, "end_turn")
        yield ModelDone(Message("assistant", tuple(blocks)), stop)

    async def _create(self, body: dict[str, Any]) -> Any:
        """Start the stream; a model whose server refuses tools is asked again without
        them (and from then on), so an agent degrades to plain answers."""
        assert self._client is not None
        for _attempt in range(3):
            try:
                return await self._client.chat.completions.create(**body)
            except openai.BadRequestError as err:
                changed = self._without_unsupported(body, str(err.message))
                if changed is None:
                    raise
                body = changed
        return await self._client.chat.completions.create(**body)

    def _without_unsupported(self, body: dict[str, Any], message: str) -> dict[str, Any] | None:
        """``body`` without what the server just said the model does not support (tools;
        ``max_tokens`` where it wants ``max_completion_tokens``), remembered for later
        calls; None when the refusal was about something else."""
        model = str(body["model"])
        if "tools" in body and _NO_TOOLS.search(message):
            self._toolless.add(model)
            log.warning("openai_tools_unsupported", provider=self.label, model=model)
            return {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
        if "max_tokens" in body and _COMPLETION_TOKENS.search(message):
            self._completion_tokens.add(model)
            log.info("openai_uses_max_completion_tokens", provider=self.label, model=model)
            changed = {k: v for k, v in body.items() if k != "max_tokens"}
            changed["max_completion_tokens"] = body["max_tokens"]
            return changed
        return None

    def _failed(self, err: BaseException, request: ModelRequest) -> ProviderError:
        failure = provider_error(err, self.label, self._key_env)
        log.warning(
            "openai_call_failed",
            provider=self.label,
            model=request.model,
            error_type=type(err).__name__,
            status_code=getattr(err, "status_code", None),
            detail=str(err)[:500],
            user_message=failure.user_message,
            too_long=failure.too_long,
            fallback=failure.fallback,
        )
        return failure
