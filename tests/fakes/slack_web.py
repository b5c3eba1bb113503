"""The Slack fake's Web API methods, with Slack's refusals.

Every method answers HTTP 200 with ``{"ok": true, ...}`` or ``{"ok": false, "error":
"<code>"}`` (Slack's codes: ``not_authed`` without a token, ``invalid_auth`` for an
unknown one, ``not_allowed_token_type`` for an app token where a bot token belongs and
the reverse, ``channel_not_found``, ``not_in_channel``, ``no_text``, ``msg_too_long``,
``markdown_text_conflict``, ``invalid_blocks``, ``invalid_metadata_format``,
``message_not_found``, ``cant_update_message``, ``invalid_thread_ts``,
``invalid_arguments``), except a rate-limited call: HTTP 429 with ``Retry-After``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tests.fakes.slack_limits import RateLimits
from tests.fakes.slack_state import (
    MAX_BLOCKS,
    MAX_MARKDOWN,
    MAX_SECTION_TEXT,
    MAX_TEXT,
    Conversation,
    Message,
    StoredFile,
    Workspace,
)

JSON_METHODS = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.delete",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
        "files.completeUploadExternal",
        "assistant.threads.setStatus",
        "apps.connections.open",
        "auth.test",
    }
)
"""Methods Slack documents as taking ``application/json``; the rest take only forms, and
a JSON body sent to one of them is not read."""
T = TypeVar("T", int, float)
HISTORY_SCOPES = {
    "channel": "channels:history",
    "group": "groups:history",
    "im": "im:history",
    "mpim": "mpim:history",
}
"""The scope ``conversations.history`` needs, by the conversation's type."""
HISTORY_MOST_UNLISTED = 15
"""Since 2025, a non-Marketplace app's page holds at most 15 messages (and 1 call a
minute)."""
_EVENT_TYPE = re.compile(r"^[A-Za-z0-9_]{1,255}$")


class ApiError(Exception):
    def __init__(self, code: str, **extra: str) -> None:
        super().__init__(code)
        self.code = code
        self.extra = extra
        """More of the answer (``missing_scope``'s ``needed`` and ``provided``)."""


@dataclass(slots=True)
class Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Call:
    """One Web API call as the fake received it (token never kept)."""

    method: str
    args: dict[str, Any]
    error: str | None = None


def _json_arg(value: Any) -> Any:
    """Form posts carry blocks and metadata as JSON strings; JSON posts as values."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ApiError("invalid_arguments") from exc
    return value


class WebApi:
    def __init__(
        self,
        workspace: Workspace,
        limits: RateLimits,
        *,
        bot_token: str,
        app_token: str,
        base_url: Callable[[], str],
    ) -> None:
        self.ws = workspace
        self.limits = limits
        self.bot_token = bot_token
        self.app_token = app_token
        self.base_url = base_url
        self.streaming_supported = True
        self.calls: list[Call] = []
        self.faults: dict[str, list[str]] = {}
        """Errors a test asked a method to answer with next (first in, first out)."""
        self.lost: dict[str, int] = {}
        """Methods whose next calls take effect but whose answer is lost (dropped)."""
        self.open_connection: Callable[[], str] = lambda: ""

    # -- dispatch --------------------------------------------------------------------

    def handle(self, method: str, args: dict[str, Any], token: str | None) -> Reply:
        call = Call(method, {k: v for k, v in args.items() if k != "token"})
        self.calls.append(call)
        try:
            reply = self._dispatch(method, args, token)
        except ApiError as exc:
            call.error = exc.code
            return Reply(200, {"ok": False, "error": exc.code, **exc.extra})
        if reply.status == 429:
            call.error = "ratelimited"
        return reply

    def _dispatch(self, method: str, args: dict[str, Any], token: str | None) -> Reply:
        handler = self._methods().get(method)
        if handler is None:
            raise ApiError("unknown_method")
        self._authorize(method, token)
        key = str(args.get("channel") or args.get("channel_id") or "")
        retry_after = self.limits.check(method, key)
        if retry_after is not None:
            return Reply(
                429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)}
            )
        faults = self.faults.get(method)
        if faults:
            raise ApiError(faults.pop(0))
        return Reply(200, {"ok": True, **handler(args)})

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            "auth.test": self.auth_test,
            "apps.connections.open": self.apps_connections_open,
            "chat.postMessage": self.chat_post_message,
            "chat.update": self.chat_update,
            "chat.startStream": self.chat_start_stream,
            "chat.appendStream": self.chat_append_stream,
            "chat.stopStream": self.chat_stop_stream,
            "conversations.history": self.conversations_history,
            "conversations.replies": self.conversations_replies,
            "files.getUploadURLExternal": self.files_get_upload_url_external,
            "files.completeUploadExternal": self.files_complete_upload_external,
            "assistant.threads.setStatus": self.assistant_threads_set_status,
        }

    def _authorize(self, method: str, token: str | None) -> None:
        if not token:
            raise ApiError("not_authed")
        if token not in {self.bot_token, self.app_token}:
            raise ApiError("invalid_auth")
        wants_app = method == "apps.connections.open"
        if (token == self.app_token) != wants_app:
            raise ApiError("not_allowed_token_type")

    # -- helpers ---------------------------------------------------------------------

    def _conversation(self, args: dict[str, Any], key: str = "channel") -> Conversation:
        channel = args.get(key)
        if not isinstance(channel, str) or not channel:
            raise ApiError("channel_not_found")
        conversation = self.ws.conversations.get(channel)
        if conversation is None:
            raise ApiError("channel_not_found")
        if self.ws.bot_user not in conversation.members:
            raise ApiError("not_in_channel")
        return conversation

    def _content(self, args: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
        text = args.get("text")
        markdown = args.get("markdown_text")
        blocks = _json_arg(args["blocks"]) if args.get("blocks") else []
        if markdown is not None and (text or blocks):
            raise ApiError("markdown_text_conflict")
        if required and not text and not markdown and not blocks:
            raise ApiError("no_text")
        if text is not None and len(str(text)) > MAX_TEXT:
            raise ApiError("msg_too_long")
        if markdown is not None and len(str(markdown)) > MAX_MARKDOWN:
            raise ApiError("msg_too_long")
        _check_blocks(blocks)
        out: dict[str, Any] = {"blocks": blocks}
        if markdown is not None:
            out["markdown_text"] = str(markdown)
            out["text"] = ""
        else:
            out["text"] = str(text or "")
        return out

    def _metadata(self, args: dict[str, Any]) -> dict[str, Any] | None:
        raw = args.get("metadata")
        if raw is None:
            return None
        metadata = _json_arg(raw)
        if (
            not isinstance(metadata, dict)
            or not isinstance(metadata.get("event_type"), str)
            or not _EVENT_TYPE.match(metadata["event_type"])
            or not isinstance(metadata.get("event_payload"), dict)
        ):
            raise ApiError("invalid_metadata_format")
        return {"event_type": metadata["event_type"], "event_payload": metadata["event_payload"]}

    def _thread(self, conversation: Conversation, args: dict[str, Any]) -> str | None:
        thread_ts = args.get("thread_ts")
        if thread_ts is None or thread_ts == "":
            return None
        parent = conversation.find(str(thread_ts))
        if parent is None or parent.thread_ts not in {None, parent.ts}:
            raise ApiError("invalid_thread_ts")
        return str(thread_ts)

    def _own(self, conversation: Conversation, args: dict[str, Any]) -> Message:
        message = conversation.find(str(args.get("ts") or ""))
        if message is None:
            raise ApiError("message_not_found")
        if not message.bot:
            raise ApiError("cant_update_message")
        return message

    # -- methods ---------------------------------------------------------------------

    def auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://fake-workspace.slack.com/",
            "team": "Fake Workspace",
            "user": "thalos",
            "team_id": self.ws.team_id,
            "user_id": self.ws.bot_user,
            "bot_id": "B0FAKEBOT",
            "is_enterprise_install": False,
        }

    def apps_connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"url": self.open_connection()}

    def chat_post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        conversation = self._conversation(args)
        content = self._content(args)
        thread_ts = self._thread(conversation, args)
        message = self.ws.post(
            conversation,
            self.ws.bot_user,
            content["text"],
            thread_ts=thread_ts,
            bot=True,
            markdown_text=content.get("markdown_text"),
            blocks=content["blocks"],
            metadata=self._metadata(args),
        )
        return {"channel": conversation.id, "ts": message.ts, "message": _shown(message)}

    def chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        conversation = self._conversation(args)
        message = self._own(conversation, args)
        if message.streaming:
            raise ApiError("cant_update_message")
        content = self._content(args)
        message.text = content["text"]
        message.markdown_text = content.get("markdown_text")
        message.blocks = content["blocks"]
        if args.get("metadata") is not None:
            message.metadata = self._metadata(args)
        message.edits += 1
        message.history.append(message.shown)
        return {
            "channel": conversation.id,
            "ts": message.ts,
            "text": message.shown,
            "message": _shown(message),
        }

    def chat_start_stream(self, args: dict[str, Any]) -> dict[str, Any]:
        if not self.streaming_supported:
            raise ApiError("feature_not_enabled")
        conversation = self._conversation(args)
        thread_ts = self._thread(conversation, args)
        if thread_ts is None:
            raise ApiError("invalid_arguments")
        if conversation.kind != "im" and not (
            args.get("recipient_user_id") and args.get("recipient_team_id")
        ):
            raise ApiError("invalid_arguments")
        markdown = str(args.get("markdown_text") or "")
        if len(markdown) > MAX_MARKDOWN:
            raise ApiError("msg_too_long")
        message = self.ws.post(
            conversation,
            self.ws.bot_user,
            "",
            thread_ts=thread_ts,
            bot=True,
            markdown_text=markdown,
            streaming=True,
        )
        return {"channel": conversation.id, "ts": message.ts}

    def _streaming(self, args: dict[str, Any]) -> tuple[Conversation, Message]:
        conversation = self._conversation(args)
        message = self._own(conversation, args)
        if not message.streaming:
            raise ApiError("message_not_in_streaming_state")
        return conversation, message

    def chat_append_stream(self, args: dict[str, Any]) -> dict[str, Any]:
        conversation, message = self._streaming(args)
        markdown = args.get("markdown_text")
        if not markdown:
            raise ApiError("no_text")
        grown = (message.markdown_text or "") + str(markdown)
        if len(grown) > MAX_MARKDOWN:
            raise ApiError("msg_too_long")
        message.markdown_text = grown
        message.history.append(grown)
        return {"channel": conversation.id, "ts": message.ts}

    def chat_stop_stream(self, args: dict[str, Any]) -> dict[str, Any]:
        conversation, message = self._streaming(args)
        markdown = args.get("markdown_text")
        if markdown:
            grown = (message.markdown_text or "") + str(markdown)
            if len(grown) > MAX_MARKDOWN:
                raise ApiError("msg_too_long")
            message.markdown_text = grown
            message.history.append(grown)
        if args.get("blocks"):
            blocks = _json_arg(args["blocks"])
            _check_blocks(blocks)
            message.blocks = blocks
        message.metadata = self._metadata(args) or message.metadata
        message.streaming = False
        return {"channel": conversation.id, "ts": message.ts, "message": _shown(message)}

    def conversations_history(self, args: dict[str, Any]) -> dict[str, Any]:
        """Newest first, ``oldest`` and ``latest`` exclusive unless ``inclusive``; a
        thread's replies are not in it (its parent is, with ``reply_count``). A
        non-Marketplace app gets at most (and by default) 15 messages a page."""
        conversation = self._conversation(args)
        needed = HISTORY_SCOPES[conversation.kind]
        if needed not in self.ws.scopes:
            raise ApiError(
                "missing_scope", needed=needed, provided=",".join(sorted(self.ws.scopes))
            )
        most = HISTORY_MOST_UNLISTED if self.limits.unlisted else 999
        limit = _number(args.get("limit"), 15 if self.limits.unlisted else 100)
        if not 1 <= limit <= 999:
            raise ApiError("invalid_limit")
        limit = min(limit, most)
        inclusive = _truthy(args.get("inclusive"))
        oldest, latest = _number(args.get("oldest"), 0.0), _number(args.get("latest"), 1e12)
        cursor = str(args.get("cursor") or "")
        if cursor:
            try:
                below = base64.b64decode(cursor.encode()).decode().removeprefix("next_ts:")
                latest, inclusive_latest = float(below), False
            except (ValueError, UnicodeDecodeError) as exc:
                raise ApiError("invalid_cursor") from exc
        else:
            inclusive_latest = inclusive

        def within(m: Message) -> bool:
            ts = float(m.ts)
            low = ts >= oldest if inclusive else ts > oldest
            return low and (ts <= latest if inclusive_latest else ts < latest)

        top = [m for m in conversation.messages if m.thread_ts in {None, m.ts} and within(m)]
        page = list(reversed(top))[:limit]
        with_metadata = _truthy(args.get("include_all_metadata"))
        shown = []
        for m in page:
            out = m.to_api(with_metadata=with_metadata)
            replies = [r for r in conversation.messages if r.thread_ts == m.ts and r is not m]
            if replies:
                out["reply_count"] = len(replies)
            shown.append(out)
        more = len(top) > limit
        after = base64.b64encode(f"next_ts:{page[-1].ts}".encode()).decode() if more else ""
        return {"messages": shown, "has_more": more, "response_metadata": {"next_cursor": after}}

    def conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        conversation = self._conversation(args)
        ts = str(args.get("ts") or "")
        parent = conversation.find(ts)
        if parent is None:
            raise ApiError("thread_not_found")
        oldest = float(args.get("oldest") or 0)
        with_metadata = _truthy(args.get("include_all_metadata"))
        thread = [parent] + [m for m in conversation.messages if m.thread_ts == ts and m.ts != ts]
        shown = [m for m in thread if m is parent or float(m.ts) > oldest]
        return {"messages": [m.to_api(with_metadata=with_metadata) for m in shown]}

    def files_get_upload_url_external(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("filename")
        try:
            length = int(args.get("length") or 0)
        except ValueError as exc:
            raise ApiError("invalid_arguments") from exc
        if not name or length <= 0:
            raise ApiError("invalid_arguments")
        file_id = self.ws.new_id("F")
        self.ws.files[file_id] = StoredFile(file_id, str(name), length, uploader=self.ws.bot_user)
        return {"upload_url": f"{self.base_url()}/upload/{file_id}", "file_id": file_id}

    def files_complete_upload_external(self, args: dict[str, Any]) -> dict[str, Any]:
        files = _json_arg(args.get("files") or "[]")
        if not isinstance(files, list) or not files:
            raise ApiError("invalid_arguments")
        stored: list[StoredFile] = []
        for entry in files:
            file = self.ws.files.get(str(entry.get("id", ""))) if isinstance(entry, dict) else None
            if file is None:
                raise ApiError("file_not_found")
            if file.data is None or len(file.data) != file.length:
                raise ApiError("file_upload_size_mismatch")
            file.title = str(entry.get("title") or file.name)
            stored.append(file)
        channel = args.get("channel_id") or args.get("channels")
        if channel:
            conversation = self._conversation({"channel": channel})
            thread_ts = self._thread(conversation, args)
            comment = str(args.get("initial_comment") or "")
            self.ws.post(
                conversation,
                self.ws.bot_user,
                comment,
                thread_ts=thread_ts,
                bot=True,
                files=[f.id for f in stored],
            )
        for file in stored:
            file.completed = True
        return {"files": [{"id": f.id, "title": f.title, "name": f.name} for f in stored]}

    def assistant_threads_set_status(self, args: dict[str, Any]) -> dict[str, Any]:
        conversation = self._conversation(args, "channel_id")
        if conversation.kind != "im" or not args.get("thread_ts") or "status" not in args:
            raise ApiError("invalid_arguments")
        return {}


def _number(value: Any, default: T) -> T:
    """A numeric argument (as a form sends it), or ``default`` when absent."""
    if value is None or value == "":
        return default
    try:
        return type(default)(value)
    except ValueError as exc:
        raise ApiError("invalid_arguments") from exc


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in {"true", "1"}


def _shown(message: Message) -> dict[str, Any]:
    return message.to_api(with_metadata=False)


def _check_blocks(blocks: Any) -> None:
    if not isinstance(blocks, list) or len(blocks) > MAX_BLOCKS:
        raise ApiError("invalid_blocks")
    for block in blocks:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise ApiError("invalid_blocks")
        text = block.get("text")
        if block["type"] == "section" and (
            not isinstance(text, dict) or len(str(text.get("text", ""))) > MAX_SECTION_TEXT
        ):
            raise ApiError("invalid_blocks")
        if block["type"] == "markdown" and len(str(block.get("text", ""))) > MAX_MARKDOWN:
            raise ApiError("invalid_blocks")
        if block["type"] == "actions":
            elements = block.get("elements")
            if not isinstance(elements, list) or not elements or len(elements) > 25:
                raise ApiError("invalid_blocks")
            for element in elements:
                if not isinstance(element, dict) or not element.get("action_id"):
                    raise ApiError("invalid_blocks")
