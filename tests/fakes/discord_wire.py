"""Discord's wire details the fake shares: snowflakes, JSON error bodies, payload checks.

Error bodies are Discord's: ``{"message": ..., "code": ...}`` with the JSON error code of
the API reference (10003 Unknown Channel, 10008 Unknown Message, 10062 Unknown
interaction, 40060 already acknowledged, 50005 another user's message, 50006 empty
message, 50035 Invalid Form Body with its ``errors`` tree), and 401 ``"401: Unauthorized"``
with code 0.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

DISCORD_EPOCH_MS = 1_420_070_400_000
MAX_CONTENT = 2000
MAX_NONCE = 25
MAX_BUTTONS_PER_ROW = 5
MAX_ROWS = 5
MAX_LABEL = 80
MAX_CUSTOM_ID = 100
BUTTON_STYLES = {1, 2, 3, 4, 5, 6}
LINK_STYLE = 5


class Snowflakes:
    """Ids as Discord makes them: milliseconds since 2015 in the top bits, an increment in
    the low twelve, so that ids grow with time and never repeat."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._last = 0

    def next(self) -> int:
        with self._lock:
            ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
            candidate = (ms << 22) | (next(self._counter) & 0xFFF)
            self._last = max(self._last + 1, candidate)
            return self._last


@dataclass(frozen=True, slots=True)
class ApiError(Exception):
    """A refusal as Discord words it."""

    status: int
    code: int
    message: str
    errors: dict[str, Any] | None = field(default=None)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors is not None:
            body["errors"] = self.errors
        return body


UNAUTHORIZED = ApiError(401, 0, "401: Unauthorized")
UNKNOWN_CHANNEL = ApiError(404, 10003, "Unknown Channel")
UNKNOWN_MESSAGE = ApiError(404, 10008, "Unknown Message")
UNKNOWN_USER = ApiError(404, 10013, "Unknown User")
UNKNOWN_APPLICATION = ApiError(404, 10002, "Unknown Application")
UNKNOWN_INTERACTION = ApiError(404, 10062, "Unknown interaction")
ALREADY_ACKNOWLEDGED = ApiError(400, 40060, "Interaction has already been acknowledged.")
NOT_AUTHOR = ApiError(403, 50005, "Cannot edit a message authored by another user")
EMPTY_MESSAGE = ApiError(400, 50006, "Cannot send an empty message")
MISSING_ACCESS = ApiError(403, 50001, "Missing Access")
TOO_LARGE = ApiError(413, 40005, "Request entity too large")
NOT_FOUND = ApiError(404, 0, "404: Not Found")
METHOD_NOT_ALLOWED = ApiError(405, 0, "405: Method Not Allowed")


def form_error(path: str, code: str, message: str) -> ApiError:
    """50035 Invalid Form Body, with the one field error at ``path`` (dots for nesting)."""
    tree: dict[str, Any] = {"_errors": [{"code": code, "message": message}]}
    for part in reversed(path.split(".")):
        tree = {part: tree}
    return ApiError(400, 50035, "Invalid Form Body", tree)


def check_content(body: dict[str, Any]) -> None:
    content = body.get("content")
    if content is not None and not isinstance(content, str):
        raise form_error("content", "STRING_TYPE_CONVERT", "Could not interpret value as string.")
    if isinstance(content, str) and len(content) > MAX_CONTENT:
        raise form_error(
            "content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length."
        )


def check_nonce(body: dict[str, Any]) -> str | None:
    nonce = body.get("nonce")
    if nonce is None:
        if body.get("enforce_nonce"):
            raise form_error("nonce", "BASE_TYPE_REQUIRED", "This field is required")
        return None
    if isinstance(nonce, bool) or not isinstance(nonce, str | int):
        raise form_error("nonce", "NONCE_TYPE_INVALID", "Nonce must be an integer or string.")
    text = str(nonce)
    if len(text) > MAX_NONCE:
        raise form_error(
            "nonce", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_NONCE} or fewer in length."
        )
    return text


def check_components(components: Any) -> list[dict[str, Any]]:
    """Action rows of buttons, as the API checks them (the fake knows no other kind)."""
    if components is None:
        return []
    if not isinstance(components, list) or len(components) > MAX_ROWS:
        raise form_error(
            "components", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_ROWS} or fewer in length."
        )
    seen: set[str] = set()
    for r, row in enumerate(components):
        if not isinstance(row, dict) or row.get("type") != 1:
            raise form_error(
                f"components.{r}.type",
                "UNION_TYPE_CHOICES",
                'Value of field "type" must be one of (1,).',
            )
        buttons = row.get("components")
        if not isinstance(buttons, list) or not buttons or len(buttons) > MAX_BUTTONS_PER_ROW:
            raise form_error(
                f"components.{r}.components",
                "BASE_TYPE_BAD_LENGTH",
                f"Must be between 1 and {MAX_BUTTONS_PER_ROW} in length.",
            )
        for b, button in enumerate(buttons):
            where = f"components.{r}.components.{b}"
            if not isinstance(button, dict) or button.get("type") != 2:
                raise form_error(
                    f"{where}.type",
                    "UNION_TYPE_CHOICES",
                    'Value of field "type" must be one of (2,).',
                )
            if button.get("style") not in BUTTON_STYLES:
                raise form_error(
                    f"{where}.style",
                    "BASE_TYPE_CHOICES",
                    "Value must be one of {1, 2, 3, 4, 5, 6}.",
                )
            label = button.get("label")
            if isinstance(label, str) and len(label) > MAX_LABEL:
                raise form_error(
                    f"{where}.label",
                    "BASE_TYPE_MAX_LENGTH",
                    f"Must be {MAX_LABEL} or fewer in length.",
                )
            if button["style"] == LINK_STYLE:
                if "custom_id" in button or not button.get("url"):
                    raise form_error(
                        f"{where}.url", "BUTTON_COMPONENT_URL_REQUIRED", "A url is required"
                    )
                continue
            custom = button.get("custom_id")
            if not isinstance(custom, str) or not custom:
                raise form_error(
                    f"{where}.custom_id",
                    "BUTTON_COMPONENT_CUSTOM_ID_REQUIRED",
                    "A custom id is required",
                )
            if len(custom) > MAX_CUSTOM_ID:
                raise form_error(
                    f"{where}.custom_id",
                    "BASE_TYPE_MAX_LENGTH",
                    f"Must be {MAX_CUSTOM_ID} or fewer in length.",
                )
            if custom in seen:
                raise form_error(
                    f"{where}.custom_id",
                    "COMPONENT_CUSTOM_ID_DUPLICATED",
                    "Component custom id cannot be duplicated",
                )
            seen.add(custom)
    return components


def iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000+00:00", time.gmtime())


_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")
_PARSE_KINDS = frozenset({"everyone", "users", "roles"})


def pings(content: str, allowed: Any) -> tuple[bool, list[int], list[int]]:
    """Who a message's ``content`` pings, as Discord decides it: (everyone or here, user
    ids, role ids). With no ``allowed_mentions`` every mention in the text pings; with
    one, only the kinds named in ``parse`` and the ids listed in ``users``/``roles``."""
    everyone = "@everyone" in content or "@here" in content
    users = [int(u) for u in _USER_MENTION.findall(content)]
    roles = [int(r) for r in _ROLE_MENTION.findall(content)]
    if allowed is None:
        return everyone, users, roles
    if not isinstance(allowed, dict):
        raise form_error(
            "allowed_mentions", "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType"
        )
    parse = allowed.get("parse", [])
    if not isinstance(parse, list) or not set(parse) <= _PARSE_KINDS:
        raise form_error(
            "allowed_mentions.parse",
            "BASE_TYPE_CHOICES",
            "Value must be one of {'everyone', 'users', 'roles'}.",
        )
    listed_users = {int(u) for u in allowed.get("users", [])}
    listed_roles = {int(r) for r in allowed.get("roles", [])}
    for kind, listed in (("users", listed_users), ("roles", listed_roles)):
        if kind in parse and listed:
            raise form_error(
                "allowed_mentions",
                "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                f'parse:["{kind}"] and {kind}: [ids] are mutually exclusive.',
            )
    return (
        everyone and "everyone" in parse,
        [u for u in users if "users" in parse or u in listed_users],
        [r for r in roles if "roles" in parse or r in listed_roles],
    )
