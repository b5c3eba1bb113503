"""Inline keyboards for the Telegram fake: button presses, answerCallbackQuery,
editMessageReplyMarkup, and the Bot API's checks on an ``inline_keyboard``.

    update_id, query_id = fake.press_button(chat_id, user_id, message_id, data)

A press is only possible on a button that is there: the message must be the bot's, in
that chat, and carry a button with exactly that ``callback_data`` (a real client can send
nothing else). Each press is a ``callback_query`` update with a fresh query id; the bot
may answer a query once. Answering an unknown, already answered or expired
(:meth:`CallbackQueries.expire`) id is refused with Telegram's "query is too old and
response timeout expired or query ID is invalid".

Inline keyboards sent with sendMessage, editMessageText or editMessageReplyMarkup are
checked like the Bot API does: an array of rows of buttons; a button has a ``text`` and
one action; ``callback_data`` is 1-64 bytes (otherwise ``BUTTON_DATA_INVALID``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tests.fakes.telegram_content import sender
from tests.fakes.telegram_wire import Json, bad_request, int_param, ok

METHODS = ("answerCallbackQuery", "editMessageReplyMarkup")
QUERY_INVALID = "query is too old and response timeout expired or query ID is invalid"
NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
_ACTIONS = frozenset(
    {
        "url",
        "callback_data",
        "web_app",
        "login_url",
        "switch_inline_query",
        "switch_inline_query_current_chat",
        "switch_inline_query_chosen_chat",
        "copy_text",
        "callback_game",
        "pay",
    }
)
_MAX_CALLBACK_DATA = 64
_MAX_ANSWER_TEXT = 200


def check_reply_markup(markup: object) -> None:
    """Refuse an inline keyboard the Bot API would refuse (other markups pass)."""
    if not isinstance(markup, dict):
        raise bad_request("can't parse reply keyboard markup JSON object")
    if "inline_keyboard" not in markup:
        return
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise bad_request("can't parse reply keyboard markup JSON object")
    for row in rows:
        for button in row:
            _check_button(button)


def _check_button(button: object) -> None:
    if not isinstance(button, dict):
        raise bad_request(
            "can't parse inline keyboard button: InlineKeyboardButton must be an Object"
        )
    if not isinstance(button.get("text"), str):
        raise bad_request(
            'can\'t parse inline keyboard button: Field "text" must be of type String'
        )
    actions = [key for key in button if key in _ACTIONS]
    if not actions:
        raise bad_request(
            "can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
        )
    data = button.get("callback_data")
    if "callback_data" in button and (
        not isinstance(data, str) or not 1 <= len(data.encode()) <= _MAX_CALLBACK_DATA
    ):
        raise bad_request("BUTTON_DATA_INVALID")


def callback_data_of(markup: Json | None) -> set[str]:
    rows = (markup or {}).get("inline_keyboard", [])
    return {b["callback_data"] for row in rows for b in row if "callback_data" in b}


@dataclass
class Query:
    id: str
    chat_id: int
    message_id: int
    data: str
    answered: Json | None = None
    """The answerCallbackQuery parameters, once answered."""
    expired: bool = False


class CallbackQueries:
    """The queries handed out and their answers. ``world`` is the fake's BotWorld: the
    messages live there (``stored_message`` / ``replace_message``)."""

    def __init__(self, world: Any) -> None:
        self._world = world
        self.queries: dict[str, Query] = {}
        self._serial = 0

    def handlers(self) -> dict[str, Callable[[Json], Json]]:
        return {
            "answerCallbackQuery": self._answer_callback_query,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
        }

    def press(
        self,
        chat_id: int,
        user_id: int,
        message_id: int,
        data: str,
        first_name: str,
        *,
        stale: bool = False,
    ) -> tuple[Json, str]:
        """The ``callback_query`` payload of a press on a button that is there (with
        ``stale``: that was there, as a client not yet redrawn still shows it)."""
        stored = self._world.stored_message(chat_id, message_id)
        if stored is None or not stored.from_bot:
            raise ValueError(f"no bot message {message_id} in chat {chat_id} to press on")
        versions = (stored.current, *stored.history) if stale else (stored.current,)
        if not any(data in callback_data_of(v.reply_markup) for v in versions):
            raise ValueError(f"message {message_id} has no button with callback_data {data!r}")
        self._serial += 1
        query_id = f"{4_000_000_000 + self._serial}"
        self.queries[query_id] = Query(query_id, chat_id, message_id, data)
        payload: Json = {
            "id": query_id,
            "from": sender(user_id, first_name, None),
            "message": stored.payload,
            "chat_instance": f"ci{chat_id}",
            "data": data,
        }
        return payload, query_id

    def expire(self, query_id: str) -> None:
        self.queries[query_id].expired = True

    def _answer_callback_query(self, params: Json) -> Json:
        query = self.queries.get(str(params.get("callback_query_id", "")))
        if query is None or query.expired or query.answered is not None:
            raise bad_request(QUERY_INVALID)
        text = params.get("text")
        if text is not None and (not isinstance(text, str) or len(text) > _MAX_ANSWER_TEXT):
            raise bad_request("MESSAGE_TOO_LONG")
        query.answered = dict(params)
        return ok(result=True)

    def _edit_message_reply_markup(self, params: Json) -> Json:
        if "inline_message_id" in params:
            raise bad_request("MESSAGE_ID_INVALID")
        chat_id = int_param(params, "chat_id")
        if "message_id" not in params:
            raise bad_request("message identifier is not specified")
        stored = self._world.stored_message(chat_id, int_param(params, "message_id"))
        if stored is None:
            raise bad_request("message to edit not found")
        if not stored.from_bot:
            raise bad_request("message can't be edited")
        markup = params.get("reply_markup")
        if markup is not None:
            check_reply_markup(markup)
        new = markup if isinstance(markup, dict) and markup.get("inline_keyboard") else None
        if new == stored.current.reply_markup:
            raise bad_request(NOT_MODIFIED)
        payload = {k: v for k, v in stored.payload.items() if k != "reply_markup"}
        payload["edit_date"] = int(time.time())
        if new is not None:
            payload["reply_markup"] = new
        version = replace(stored.current, reply_markup=new)
        self._world.replace_message(
            replace(
                stored, current=version, payload=payload, history=(*stored.history, stored.current)
            )
        )
        return ok(payload)
