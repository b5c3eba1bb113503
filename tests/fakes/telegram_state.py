"""The Telegram fake's world: chats, messages, drafts, commands, and the methods on them.

`BotWorld.handle(method, params)` answers every method except getUpdates (the fake
server long-polls around `UpdateQueue` itself) with Bot API JSON, or raises `ApiError`
with Telegram's wording. Not thread-safe: the fake locks around it.

Texts are kept twice: `raw_text` as the client sent it (HTML source with
parse_mode=HTML) and `text` as a user sees it (tags stripped, entities decoded,
surrounding whitespace trimmed, as Telegram does). Limits count UTF-16 code units.
Markdown parse modes are accepted but not checked: their text is stored as sent.

Message ids are numbered as Telegram numbers them: the bot account has one counter, and
every message in a private chat or a basic group (type "private" or "group"), the
user's and the bot's alike, whichever chat it is in, takes the next number from it;
a supergroup and a channel each have a counter of their own. So with two people writing
to the bot, each private chat's ids go up but are not contiguous. Editing a user's
message answers "message can't be edited"; an id that is not a message of *this* chat
(another chat's, a deleted one, or none yet) answers "message to edit not found".
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tests.fakes.telegram_callbacks import check_reply_markup
from tests.fakes.telegram_groups import checked_thread, topic_fields
from tests.fakes.telegram_html import HtmlError, parse_html, utf16_len
from tests.fakes.telegram_photos import photo_handlers
from tests.fakes.telegram_updates import UpdateQueue, Webhook
from tests.fakes.telegram_wire import Json, bad_request, int_param, ok

_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
"""setWebhook's secret_token: 1-256 characters A-Z, a-z, 0-9, _ and -."""

MAX_TEXT_UTF16 = 4096

_CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
_COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")


@dataclass(frozen=True)
class Chat:
    id: int
    type: str  # private, group, supergroup, channel
    title: str | None = None
    username: str | None = None
    first_name: str | None = None
    is_forum: bool = False

    def to_json(self) -> Json:
        chat: Json = {"id": self.id, "type": self.type}
        for key in ("title", "username", "first_name"):
            value = getattr(self, key)
            if value is not None:
                chat[key] = value
        if self.is_forum:
            chat["is_forum"] = True
        return chat


@dataclass(frozen=True)
class MessageVersion:
    """One content of a message (or draft): as sent, and as a user sees it."""

    raw_text: str
    text: str
    entities: tuple[Json, ...] = ()
    parse_mode: str | None = None
    reply_markup: Json | None = None

    def same_content(self, other: MessageVersion) -> bool:
        return (self.text, self.entities, self.reply_markup) == (
            other.text,
            other.entities,
            other.reply_markup,
        )


@dataclass(frozen=True)
class StoredMessage:
    """A message in a chat as it stands now; `history` holds the earlier versions."""

    chat_id: int
    message_id: int
    from_bot: bool
    kind: str  # "text", or the content field of other messages: "photo", "sticker", ...
    current: MessageVersion
    payload: Json = field(repr=False)  # the Message object as the Bot API returns it
    history: tuple[MessageVersion, ...] = ()

    @property
    def text(self) -> str:
        """What a user sees (the caption, for media)."""
        return self.current.text

    @property
    def raw_text(self) -> str:
        return self.current.raw_text

    @property
    def entities(self) -> tuple[Json, ...]:
        return self.current.entities


class BotWorld:
    def __init__(self, bot_user: Json, updates: UpdateQueue) -> None:
        self.bot_user = bot_user
        self.updates = updates
        self.chats: dict[int, Chat] = {}
        self._messages: dict[int, dict[int, StoredMessage]] = {}
        self._last_message_id: dict[int | None, int] = {}
        """The last id each counter gave out: key None is the bot account's (private
        chats and basic groups), a chat id a supergroup's or a channel's."""
        self._drafts: dict[int, dict[int, MessageVersion]] = {}
        self._commands: dict[str, list[Json]] = {}
        self.topics: dict[int, set[int]] = {}
        """Forum topics (thread ids) per chat (see telegram_groups)."""
        self._handlers = {
            "getMe": self._get_me,
            "sendMessage": self._send_message,
            "editMessageText": self._edit_message_text,
            "sendMessageDraft": self._send_message_draft,
            "sendChatAction": self._send_chat_action,
            "deleteMessage": self._delete_message,
            "setMyCommands": self._set_my_commands,
            "getMyCommands": self._get_my_commands,
            "setWebhook": self._set_webhook,
            "deleteWebhook": self._delete_webhook,
            "getWebhookInfo": self._get_webhook_info,
        }
        self._handlers |= photo_handlers(self)

    # -- the test's side -----------------------------------------------------------

    def add_chat(self, chat: Chat) -> None:
        self.chats[chat.id] = chat

    def add_incoming(self, chat: Chat, sender: Json | None, content: Json) -> Json:
        """Store a message a user (or a channel) posted; return its Message object."""
        self.add_chat(chat)
        payload: Json = {"message_id": self._new_message_id(chat.id)}
        if sender is not None:
            payload["from"] = sender
        if chat.type == "channel":
            payload["sender_chat"] = chat.to_json()
        payload |= {"chat": chat.to_json(), "date": int(time.time()), **content}
        kind = next((k for k in content if k not in {"caption", "caption_entities"}), "text")
        visible = str(content.get("text", content.get("caption", "")))
        entities = content.get("entities") or content.get("caption_entities") or ()
        version = MessageVersion(visible, visible, tuple(entities))
        stored = StoredMessage(
            chat.id,
            payload["message_id"],
            from_bot=False,
            kind=kind,
            current=version,
            payload=payload,
        )
        self._messages.setdefault(chat.id, {})[stored.message_id] = stored
        return payload

    def messages(self, chat_id: int) -> list[StoredMessage]:
        return list(self._messages.get(chat_id, {}).values())

    def drafts(self, chat_id: int) -> dict[int, MessageVersion]:
        return dict(self._drafts.get(chat_id, {}))

    def edit_incoming(self, payload: Json) -> None:
        """A user (or a channel) edited a message they posted: from now on it stands as
        ``payload`` (a Message object with ``edit_date``), in replies to it too."""
        chat = payload.get("chat")
        chat_id = chat.get("id") if isinstance(chat, dict) else None
        message_id = payload.get("message_id")
        stored = (
            self.stored_message(chat_id, message_id)
            if isinstance(chat_id, int) and isinstance(message_id, int)
            else None
        )
        if stored is None or stored.from_bot:
            raise ValueError(f"no message a user posted: {chat_id}/{payload.get('message_id')}")
        visible = str(payload.get("text", payload.get("caption", "")))
        entities = payload.get("entities") or payload.get("caption_entities") or ()
        version = MessageVersion(visible, visible, tuple(entities))
        self._messages[stored.chat_id][stored.message_id] = replace(
            stored, current=version, payload=payload, history=(*stored.history, stored.current)
        )

    def stored_message(self, chat_id: int, message_id: int) -> StoredMessage | None:
        return self._messages.get(chat_id, {}).get(message_id)

    def replace_message(self, stored: StoredMessage) -> None:
        self._messages.setdefault(stored.chat_id, {})[stored.message_id] = stored

    def add_handlers(self, handlers: dict[str, Callable[[Json], Json]]) -> None:
        """More methods, served by another module (e.g. telegram_callbacks)."""
        self._handlers.update(handlers)

    def handle(self, method: str, params: Json) -> Json:
        return self._handlers[method](params)

    # -- for method modules (telegram_photos) ------------------------------------

    def chat_of(self, params: Json) -> Chat:
        return self._chat(params)

    def stored_of(self, chat: Chat, params: Json, missing: str) -> StoredMessage:
        return self._stored(chat, params, missing)

    def new_message_id(self, chat_id: int) -> int:
        return self._new_message_id(chat_id)

    def store_sent(
        self, chat_id: int, message_id: int, kind: str, text: str, payload: Json
    ) -> None:
        version = MessageVersion(text, text)
        stored = StoredMessage(
            chat_id, message_id, from_bot=True, kind=kind, current=version, payload=payload
        )
        self._messages.setdefault(chat_id, {})[message_id] = stored

    def replace_stored(self, stored: StoredMessage) -> None:
        self._messages[stored.chat_id][stored.message_id] = stored

    # -- helpers -------------------------------------------------------------------

    def _new_message_id(self, chat_id: int) -> int:
        counter = counter_of(self.chats[chat_id])
        message_id = self._last_message_id.get(counter, 0) + 1
        self._last_message_id[counter] = message_id
        return message_id

    def _chat(self, params: Json) -> Chat:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise bad_request("chat_id is empty")
        if isinstance(chat_id, int) and chat_id in self.chats:
            return self.chats[chat_id]
        if isinstance(chat_id, str) and chat_id.startswith("@"):
            for chat in self.chats.values():
                if chat.username and chat.username.lower() == chat_id[1:].lower():
                    return chat
        raise bad_request("chat not found")

    def _render(self, params: Json) -> MessageVersion:
        raw = params.get("text")
        raw_text = "" if raw is None else str(raw)
        parse_mode = params.get("parse_mode")
        mode = parse_mode.lower() if isinstance(parse_mode, str) else None
        if mode == "html":
            try:
                parsed = parse_html(raw_text)
            except HtmlError as error:
                raise bad_request(f"can't parse entities: {error}") from None
            text, entities = parsed.text, parsed.entities
        elif mode in {"markdown", "markdownv2"}:
            text, entities = raw_text, ()
        elif parse_mode is not None:
            raise bad_request("unsupported parse_mode")
        else:
            given = params.get("entities", [])
            if not isinstance(given, list):
                raise bad_request("can't parse entities JSON object")
            text, entities = raw_text, tuple(given)
        text, entities = _trim(text, entities)
        markup = params.get("reply_markup")
        if markup is not None:
            check_reply_markup(markup)
        return MessageVersion(
            raw_text,
            text,
            entities,
            parse_mode if isinstance(parse_mode, str) else None,
            markup if isinstance(markup, dict) else None,
        )

    def _stored(self, chat: Chat, params: Json, missing: str) -> StoredMessage:
        if "message_id" not in params:
            raise bad_request("message identifier is not specified")
        message_id = int_param(params, "message_id")
        stored = self._messages.get(chat.id, {}).get(message_id)
        if stored is None:
            raise bad_request(missing)
        return stored

    # -- methods -------------------------------------------------------------------

    def _get_me(self, params: Json) -> Json:
        return ok(self.bot_user)

    def _send_message(self, params: Json) -> Json:
        chat = self._chat(params)
        version = self._render(params)
        if not version.text:
            raise bad_request("message text is empty")
        if utf16_len(version.text) > MAX_TEXT_UTF16:
            raise bad_request("message is too long")
        thread = checked_thread(chat, self.topics.get(chat.id, set()), params)
        reply_to = self._reply_target(chat, params)
        payload: Json = {"message_id": self._new_message_id(chat.id), **topic_fields(thread)}
        if chat.type == "channel":
            payload["sender_chat"] = chat.to_json()
        else:
            payload["from"] = self.bot_user
        payload |= {"chat": chat.to_json(), "date": int(time.time())}
        if reply_to is not None:
            payload["reply_to_message"] = {
                k: v for k, v in reply_to.payload.items() if k != "reply_to_message"
            }
        payload |= _content(version)
        stored = StoredMessage(
            chat.id,
            payload["message_id"],
            from_bot=True,
            kind="text",
            current=version,
            payload=payload,
        )
        self._messages.setdefault(chat.id, {})[stored.message_id] = stored
        return ok(payload)

    def _reply_target(self, chat: Chat, params: Json) -> StoredMessage | None:
        reply = params.get("reply_parameters")
        if isinstance(reply, dict) and "message_id" in reply:
            message_id, lenient = (
                reply["message_id"],
                bool(reply.get("allow_sending_without_reply")),
            )
        elif "reply_to_message_id" in params:
            message_id = params["reply_to_message_id"]
            lenient = bool(params.get("allow_sending_without_reply"))
        else:
            return None
        target = self._messages.get(chat.id, {}).get(message_id)
        if target is None and not lenient:
            raise bad_request("message to be replied not found")
        return target

    def _edit_message_text(self, params: Json) -> Json:
        if "inline_message_id" in params:
            raise bad_request("MESSAGE_ID_INVALID")
        chat = self._chat(params)
        stored = self._stored(chat, params, "message to edit not found")
        version = self._render(params)
        if not version.text:
            raise bad_request("message text is empty")
        if utf16_len(version.text) > MAX_TEXT_UTF16:
            raise bad_request("MESSAGE_TOO_LONG")
        if not stored.from_bot or stored.kind != "text":
            raise bad_request("message can't be edited")
        if version.same_content(stored.current):
            raise bad_request(
                "message is not modified: specified new message content and reply markup "
                "are exactly the same as a current content and reply markup of the message"
            )
        payload = {
            k: v for k, v in stored.payload.items() if k not in {"text", "entities", "reply_markup"}
        }
        payload |= {"edit_date": int(time.time()), **_content(version)}
        edited = replace(
            stored, current=version, payload=payload, history=(*stored.history, stored.current)
        )
        self._messages[chat.id][stored.message_id] = edited
        return ok(payload)

    def _send_message_draft(self, params: Json) -> Json:
        chat = self._chat(params)
        if chat.type != "private":
            raise bad_request("TEXTDRAFT_PEER_INVALID")
        draft_id = int_param(params, "draft_id")
        if draft_id == 0:
            raise bad_request("draft_id must be non-zero")
        version = self._render(params)
        if utf16_len(version.text) > MAX_TEXT_UTF16:
            raise bad_request("message is too long")
        self._drafts.setdefault(chat.id, {})[draft_id] = version
        return ok(result=True)

    def _send_chat_action(self, params: Json) -> Json:
        chat = self._chat(params)
        checked_thread(chat, self.topics.get(chat.id, set()), params)
        if params.get("action") not in _CHAT_ACTIONS:
            raise bad_request("wrong parameter action in request")
        return ok(result=True)

    def _delete_message(self, params: Json) -> Json:
        chat = self._chat(params)
        stored = self._stored(chat, params, "message to delete not found")
        del self._messages[chat.id][stored.message_id]
        return ok(result=True)

    def _set_my_commands(self, params: Json) -> Json:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise bad_request("can't parse commands JSON object")
        for command in commands:
            name = command.get("command") if isinstance(command, dict) else None
            description = command.get("description") if isinstance(command, dict) else None
            if not isinstance(name, str) or not _COMMAND_NAME.fullmatch(name):
                raise bad_request("BOT_COMMAND_INVALID")
            if not isinstance(description, str) or not 1 <= len(description) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        self._commands[_commands_key(params)] = [
            {"command": c["command"], "description": c["description"]} for c in commands
        ]
        return ok(result=True)

    def _get_my_commands(self, params: Json) -> Json:
        return ok(list(self._commands.get(_commands_key(params), [])))

    def _set_webhook(self, params: Json) -> Json:
        url = str(params.get("url", ""))
        if not url:
            return self._delete_webhook(params)
        if not url.startswith("https://"):
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        if params.get("drop_pending_updates"):
            self.updates.drop_pending()
        allowed = params.get("allowed_updates")
        secret = params.get("secret_token")
        if secret is not None and not _SECRET.fullmatch(str(secret)):
            raise bad_request("secret token contains unallowed characters")
        connections = int_param(params, "max_connections", 40)
        self.updates.webhook = Webhook(
            url,
            min(100, max(1, connections)),
            tuple(allowed) if isinstance(allowed, list) else None,
            None if secret is None else str(secret),
        )
        return ok(result=True, description="Webhook was set")

    def _delete_webhook(self, params: Json) -> Json:
        if params.get("drop_pending_updates"):
            self.updates.drop_pending()
        was_set = self.updates.webhook is not None
        self.updates.webhook = None
        description = "Webhook was deleted" if was_set else "Webhook is already deleted"
        return ok(result=True, description=description)

    def _get_webhook_info(self, params: Json) -> Json:
        return ok(self.updates.webhook_info())


def counter_of(chat: Chat) -> int | None:
    """Which counter numbers the chat's messages: None for the bot account's (private
    chats and basic groups), else the chat's own (a supergroup, a channel)."""
    return None if chat.type in {"private", "group"} else chat.id


def _content(version: MessageVersion) -> Json:
    content: Json = {"text": version.text}
    if version.entities:
        content["entities"] = list(version.entities)
    if version.reply_markup is not None:
        content["reply_markup"] = version.reply_markup
    return content


def _commands_key(params: Json) -> str:
    scope = params.get("scope") or {"type": "default"}
    return json.dumps(scope, sort_keys=True) + "|" + str(params.get("language_code", ""))


def _trim(text: str, entities: tuple[Json, ...]) -> tuple[str, tuple[Json, ...]]:
    """Drop surrounding whitespace as Telegram does, keeping entities on their text."""
    stripped = text.strip()
    if stripped == text:
        return text, entities
    shift = utf16_len(text[: len(text) - len(text.lstrip())])
    end = utf16_len(stripped)
    kept: list[Json] = []
    for entity in entities:
        start = max(0, int(entity.get("offset", 0)) - shift)
        stop = min(end, int(entity.get("offset", 0)) + int(entity.get("length", 0)) - shift)
        if stop > start:
            kept.append({**entity, "offset": start, "length": stop - start})
    return stripped, tuple(kept)
