"""The body of ``POST /v1/chat/completions``, read as OpenAI reads it: whatever JSON
arrives gives either a :class:`ChatRequest` or the sentence OpenAI's API answers 400
with; nothing in it can raise (``tests/web/test_api_body_fuzz.py`` fuzzes it)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from thalos_bot.domain.slash import command_word

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    user: str | None
    stream: bool
    include_usage: bool


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "".join(str(part.get("text", "")) for part in texts)
    return ""


def digest(messages: list[dict[str, Any]]) -> str:
    said = [
        (str(m.get("role")), text_of(m).strip())
        for m in messages
        if m.get("role") in ("user", "assistant")
    ]
    return hashlib.sha256(json.dumps(said).encode()).hexdigest()


def _role(message: dict[str, Any]) -> str:
    """The message's role; "" when it is not a string (a list is no role, and is not
    hashable either)."""
    role = message.get("role")
    return role if isinstance(role, str) else ""


def problem_of(body: object) -> str | None:
    """What is wrong with a request body, as OpenAI words it (None: nothing)."""
    if not isinstance(body, dict):
        return "The body must be a JSON object."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    if not all(isinstance(m, dict) and _role(m) in ROLES for m in messages):
        return (
            "each message must be an object with a role: system, developer, user, assistant or tool"
        )
    if body.get("tools") or body.get("functions"):
        return (
            "Client-side tools are not supported: the agent's tools run inside the daemon "
            "(leave out 'tools')."
        )
    last = messages[-1]
    if last.get("role") != "user" or not text_of(last).strip():
        return "The last message must be the user's, with text."
    if command_word(text_of(last)) is not None and len(text_of(last)) > 200:
        return "A command is one short line."
    return None


def read_chat(body: object) -> ChatRequest | str:
    """``body`` as a request, or what is wrong with it."""
    problem = problem_of(body)
    if problem is not None:
        return problem
    assert isinstance(body, dict)
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        return "Invalid type for 'user': expected a string."
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        return "Invalid type for 'stream': expected a boolean."
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return "Invalid type for 'stream_options': expected an object."
    usage = (options or {}).get("include_usage")
    return ChatRequest(body["model"], body["messages"], user or None, bool(stream), bool(usage))
