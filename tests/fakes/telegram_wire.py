"""The Bot API wire format for the Telegram fake: method names, parameters, errors.

Clients send parameters as a query string, a form, or a JSON object. A form carries
every value as a string (python-telegram-bot sends numbers as digits and lists or
objects as JSON text), so `coerce_params` turns the parameters the fake understands
back into ints, bools and JSON values, as the real server does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]

METHODS = (
    "getMe",
    "getUpdates",
    "sendMessage",
    "editMessageText",
    "sendMessageDraft",
    "sendPhoto",
    "sendVoice",
    "editMessageCaption",
    "sendChatAction",
    "setMyCommands",
    "getMyCommands",
    "deleteMessage",
    "setWebhook",
    "deleteWebhook",
    "getWebhookInfo",
    "getFile",
    "answerCallbackQuery",  # these two: telegram_callbacks
    "editMessageReplyMarkup",
)
_BY_LOWER_NAME = {name.lower(): name for name in METHODS}

TERMINATED = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)

_INT_FIELDS = frozenset(
    {
        "chat_id",
        "message_id",
        "offset",
        "limit",
        "draft_id",
        "reply_to_message_id",
        "message_thread_id",
        "max_connections",
        "cache_time",
    }
)
_FLOAT_FIELDS = frozenset({"timeout"})
_BOOL_FIELDS = frozenset(
    {
        "disable_notification",
        "protect_content",
        "drop_pending_updates",
        "allow_sending_without_reply",
        "show_alert",
    }
)
_JSON_FIELDS = frozenset(
    {
        "entities",
        "allowed_updates",
        "commands",
        "reply_markup",
        "scope",
        "reply_parameters",
        "link_preview_options",
    }
)


class ApiError(Exception):
    """A Bot API error answer: HTTP status, Telegram's description, optional retry_after."""

    def __init__(self, code: int, description: str, *, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.retry_after = retry_after

    def to_json(self) -> Json:
        body: Json = {"ok": False, "error_code": self.code, "description": self.description}
        if self.retry_after is not None:
            body["parameters"] = {"retry_after": self.retry_after}
        return body


def bad_request(detail: str) -> ApiError:
    return ApiError(400, f"Bad Request: {detail}")


def too_many_requests(retry_after: int) -> ApiError:
    return ApiError(429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after)


def ok(result: Any, description: str | None = None) -> Json:
    body: Json = {"ok": True, "result": result}
    if description is not None:
        body["description"] = description
    return body


def canonical_method(name: str) -> str | None:
    """Bot API method names are case-insensitive; return the documented spelling."""
    return _BY_LOWER_NAME.get(name.lower())


def coerce_params(raw: Mapping[str, Any]) -> Json:
    """Typed parameters: digits to int, "true" to True, JSON text to JSON values."""
    params: Json = {}
    for key, value in raw.items():
        params[key] = _coerce(key, value) if isinstance(value, str) else value
    return params


def _coerce(key: str, value: str) -> Any:
    try:
        if key in _INT_FIELDS:
            return int(value)
        if key in _FLOAT_FIELDS:
            number = float(value)
            return int(number) if number.is_integer() else number
        if key in _JSON_FIELDS:
            return json.loads(value)
    except ValueError:
        return value  # left as text: the method answers with Telegram's own complaint
    if key in _BOOL_FIELDS:
        return value.lower() in {"true", "1"}
    return value


def int_param(params: Mapping[str, Any], name: str, default: int = 0) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request(f"wrong parameter {name} specified")
    return int(value)
