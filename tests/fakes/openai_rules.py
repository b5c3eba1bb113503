"""What the real Chat Completions API refuses, checked the way it checks: one JSON body
in, the first problem out (``None`` for a request the API accepts).

The OpenAI-compatible fake calls :func:`check_request` on every
``POST /v1/chat/completions`` and answers a problem with ``400 invalid_request_error``,
the API's own wording, and its ``param`` and ``code``. Rules (``N``/``M`` index the
request):

* the body has only known fields; ``model`` and ``messages`` are present, ``messages``
  is not empty; ``stream_options`` only with ``stream``; ``tool_choice`` only with
  ``tools``;
* a role is one of ``system``, ``developer``, ``user``, ``assistant``, ``tool``,
  ``function``;
* content is required (a string, or a non-empty list of parts) for system, user and tool
  messages, and for an assistant message without ``tool_calls``; a string is not empty;
* user parts are ``text`` (with text), ``image_url``, ``input_audio`` or ``file``;
  system, developer, tool and assistant parts are text (assistant: or refusal);
* an ``image_url`` url is ``https://`` or a base64 data URL of an image type, and a data
  URL's bytes are an image (PNG, JPEG, GIF or WebP, read with Pillow);
* a ``tool`` message answers a ``tool_calls`` id of the assistant message just before
  it (tool messages in between allowed); every ``tool_calls`` id of an assistant message
  is answered by the tool messages right after it; a tool call id is at most 40
  characters; its ``function.arguments`` is a string;
* tool names match ``^[a-zA-Z0-9_-]{1,64}$``; ``parameters`` is an object;
* ``max_tokens`` / ``max_completion_tokens`` is at most the model's completion limit.

Sources: the Chat Completions reference (fields, roles, parts, stream options) and the
API's refusals as users have quoted them in public bug reports (the ``tool`` message
wording keeps the API's own spelling "preceeding").
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image, UnidentifiedImageError

KNOWN_FIELDS = frozenset(
    {
        "model", "messages", "stream", "stream_options", "max_tokens",
        "max_completion_tokens", "tools", "tool_choice", "parallel_tool_calls",
        "temperature", "top_p", "n", "stop", "user", "seed", "response_format",
        "frequency_penalty", "presence_penalty", "logprobs", "top_logprobs", "metadata",
        "store", "reasoning_effort", "service_tier", "logit_bias", "modalities",
        "prediction", "audio", "web_search_options", "prompt_cache_key",
        "safety_identifier", "verbosity",
    }
)  # fmt: skip
ROLES = ("system", "assistant", "user", "function", "tool", "developer")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DATA_URL = re.compile(r"^data:image/(png|jpeg|jpg|gif|webp);base64,(.*)$", re.DOTALL)
MAX_TOOL_CALL_ID = 40

UNRECOGNIZED = "Unrecognized request argument supplied: {name}"
MISSING = "Missing required parameter: '{name}'."
EMPTY_MESSAGES = (
    "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
    "empty array instead."
)
ROLE = (
    "Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
    "'function', 'tool', and 'developer'."
)
NULL_CONTENT = "Invalid value for 'content': expected a string, got null."
EMPTY_STRING = (
    "Invalid '{path}': string too short. Expected a string with minimum length 1, but got "
    "an empty string instead."
)
EMPTY_PARTS = (
    "Invalid '{path}': empty array. Expected an array with minimum length 1, but got an "
    "empty array instead."
)
PART_TYPE = "Invalid value: '{kind}'. Supported values are: {allowed}."
IMAGE_URL = (
    "Invalid '{path}'. Expected a base64-encoded data URL with an image MIME type (e.g. "
    "'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got value starting with '{start}'."
)
BAD_IMAGE = "You uploaded an unsupported image. Please make sure your image is valid."
ORPHAN_TOOL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
    "message with 'tool_calls'."
)
UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding "
    "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
    "{ids}"
)
ID_TOO_LONG = (
    "Invalid '{path}': string too long. Expected a string with maximum length 40, but got "
    "a string with length {length} instead."
)
ARGUMENTS_TYPE = "Invalid type for '{path}': expected a string, but got an object instead."
TOOL_NAME_PATTERN = (
    "Invalid '{path}': string does not match pattern. Expected a string that matches the "
    "pattern '^[a-zA-Z0-9_-]+$'."
)
TOOL_PARAMETERS = (
    "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"'."
)
TOOL_CHOICE = (
    "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
)
STREAM_OPTIONS = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
MAX_TOKENS = (
    "max_tokens is too large: {given}. This model supports at most {limit} completion tokens, "
    "whereas you provided {given}."
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Problem:
    """A refusal: the API's message, and its ``param`` and ``code``."""

    message: str
    param: str | None = None
    code: str | None = "invalid_value"


class _Invalid(Exception):  # noqa: N818 - raised as the API refuses
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _refuse(message: str, param: str | None = None, code: str | None = "invalid_value") -> None:
    raise _Invalid(Problem(message, param, code))


def check_request(body: object, *, max_completion_tokens: int = 16_384) -> Problem | None:
    """The first problem the real API finds in ``body``, or None."""
    try:
        _check(body, max_completion_tokens)
    except _Invalid as invalid:
        return invalid.problem
    return None


def _check(body: object, limit: int) -> None:
    if not isinstance(body, Mapping):
        _refuse("We could not parse the JSON body of your request.", None, None)
        return
    for name in body:
        if name not in KNOWN_FIELDS:
            _refuse(UNRECOGNIZED.format(name=name), None, None)
    for name in ("model", "messages"):
        if name not in body:
            _refuse(MISSING.format(name=name), name, "missing_required_parameter")
    if "stream_options" in body and body.get("stream") is not True:
        _refuse(STREAM_OPTIONS, "stream_options", None)
    tools = body.get("tools")
    if "tool_choice" in body and not tools:
        _refuse(TOOL_CHOICE, "tool_choice", None)
    _check_tools(tools)
    for field in ("max_tokens", "max_completion_tokens"):
        given = body.get(field)
        if isinstance(given, int) and given > limit:
            _refuse(MAX_TOKENS.format(given=given, limit=limit), field)
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        _refuse(EMPTY_MESSAGES, "messages", "empty_array")
        return
    for index, message in enumerate(messages):
        _check_message(index, message)
    _check_tool_pairs(messages)


def _check_tools(tools: object) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        _refuse("Invalid type for 'tools': expected an array.", "tools", "invalid_type")
        return
    for index, tool in enumerate(tools):
        function = tool.get("function", {}) if isinstance(tool, Mapping) else {}
        name = function.get("name", "")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            path = f"tools[{index}].function.name"
            _refuse(TOOL_NAME_PATTERN.format(path=path), path)
        parameters = function.get("parameters", {"type": "object"})
        if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
            _refuse(TOOL_PARAMETERS.format(name=name), f"tools[{index}].function.parameters")


_PARTS = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
    "system": ("text",),
    "developer": ("text",),
    "tool": ("text",),
}


def _check_message(index: int, message: object) -> None:
    if not isinstance(message, Mapping):
        _refuse(f"Invalid type for 'messages[{index}]': expected an object.", None, None)
        return
    role = message.get("role")
    if role not in ROLES:
        _refuse(ROLE.format(role=role), f"messages[{index}].role")
    content = message.get("content")
    path = f"messages[{index}].content"
    has_calls = role == "assistant" and bool(message.get("tool_calls"))
    if content is None:
        if not has_calls and role != "function":
            _refuse(NULL_CONTENT, f"messages.[{index}].content", None)
    elif isinstance(content, str):
        if not content and role in ("user", "system", "developer"):
            _refuse(EMPTY_STRING.format(path=path), path, "string_below_min_length")
    elif isinstance(content, list):
        if not content:
            _refuse(EMPTY_PARTS.format(path=path), path, "empty_array")
        for number, part in enumerate(content):
            _check_part(f"{path}[{number}]", str(role), part)
    else:
        _refuse(f"Invalid type for '{path}': expected one of a string or array.", path)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        _refuse(MISSING.format(name=f"messages[{index}].tool_call_id"), None)
    for number, call in enumerate(message.get("tool_calls") or ()):
        _check_call(f"messages[{index}].tool_calls[{number}]", call)


def _check_part(path: str, role: str, part: object) -> None:
    kind = part.get("type") if isinstance(part, Mapping) else None
    allowed = _PARTS.get(role, ("text",))
    if not isinstance(part, Mapping) or kind not in allowed:
        listed = ", ".join(f"'{a}'" for a in allowed)
        _refuse(PART_TYPE.format(kind=kind, allowed=listed), f"{path}.type")
        return
    if kind == "text" and not isinstance(part.get("text"), str):
        _refuse(MISSING.format(name=f"{path}.text"), f"{path}.text", "missing_required_parameter")
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else None
        _check_image_url(f"{path}.image_url.url", url)


def _check_image_url(path: str, url: object) -> None:
    if not isinstance(url, str):
        _refuse(MISSING.format(name=path), path, "missing_required_parameter")
        return
    if url.startswith("https://"):
        return
    match = DATA_URL.match(url)
    if match is None:
        _refuse(IMAGE_URL.format(path=path, start=url[:30]), path)
        return
    try:
        data = base64.b64decode(match.group(2), validate=True)
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
    except (binascii.Error, UnidentifiedImageError, OSError, SyntaxError):
        _refuse(BAD_IMAGE, None, "invalid_image_format")


def _check_call(path: str, call: object) -> None:
    if not isinstance(call, Mapping):
        _refuse(f"Invalid type for '{path}': expected an object.", path)
        return
    call_id = call.get("id")
    if not isinstance(call_id, str):
        _refuse(MISSING.format(name=f"{path}.id"), f"{path}.id", "missing_required_parameter")
    elif len(call_id) > MAX_TOOL_CALL_ID:
        _refuse(ID_TOO_LONG.format(path=f"{path}.id", length=len(call_id)), f"{path}.id")
    function = call.get("function")
    arguments = function.get("arguments") if isinstance(function, Mapping) else None
    if not isinstance(arguments, str):
        where = f"{path}.function.arguments"
        _refuse(ARGUMENTS_TYPE.format(path=where), where, "invalid_type")


def _check_tool_pairs(messages: Sequence[Mapping[str, Any]]) -> None:
    open_ids: list[str] = []
    opened_at = -1
    allowed: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in allowed:
                _refuse(ORPHAN_TOOL, f"messages.[{index}].role", None)
            open_ids = [i for i in open_ids if i != call_id]
            continue
        if open_ids:
            _refuse(
                UNANSWERED.format(ids=", ".join(open_ids)), f"messages.[{opened_at}].role", None
            )
        calls = message.get("tool_calls") or () if role == "assistant" else ()
        open_ids = [str(c.get("id")) for c in calls if isinstance(c, Mapping)]
        allowed = set(open_ids)
        opened_at = index
    if open_ids:
        _refuse(UNANSWERED.format(ids=", ".join(open_ids)), f"messages.[{opened_at}].role", None)
