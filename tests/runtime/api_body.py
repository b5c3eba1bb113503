"""Request bodies as the Anthropic provider would send them, to hold any request (the
scripted provider's too) or a stored history to the real API's rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.fakes.anthropic_rules import check_request
from thalos_bot.domain.messages import Message, block_to_json
from thalos_bot.providers.anthropic_mapping import message_params, system_params, tool_params
from thalos_bot.providers.base import ModelRequest


def api_body(request: ModelRequest, *, caching: bool = True) -> dict[str, Any]:
    """The JSON body :class:`AnthropicProvider` sends for ``request``."""
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_output_tokens,
        "messages": message_params(request.messages, request.media),
        "stream": True,
    }
    system = system_params(request.system, caching=caching)
    tools = tool_params(request.tools, caching=caching)
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
    return body


def refusals(requests: Sequence[ModelRequest]) -> list[str]:
    """Why the real API would refuse each of ``requests`` (empty when it accepts all)."""
    out = []
    for number, request in enumerate(requests):
        problem = check_request(api_body(request))
        if problem is not None:
            out.append(f"request #{number}: {problem}")
    return out


def messages_body(messages: Sequence[Message]) -> dict[str, Any]:
    """A request body with ``messages`` as the provider maps them."""
    return {"model": "m", "max_tokens": 16, "messages": message_params(messages)}


def raw_body(messages: Sequence[Message]) -> dict[str, Any]:
    """A request body with ``messages`` exactly as stored, nothing filtered."""
    raw = [{"role": m.role, "content": [block_to_json(b) for b in m.content]} for m in messages]
    return {"model": "m", "max_tokens": 16, "messages": raw}
