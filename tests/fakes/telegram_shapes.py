"""Bot API objects as hypothesis strategies, whole or damaged, for fuzzing what we receive.

The shapes follow the Bot API reference: Update, Message, Chat, User, MessageEntity,
PhotoSize, Sticker, Voice, Document, a reply_to_message one level deep. ``damaged``
then takes a valid object apart the way a hostile or buggy peer might: fields dropped
(truncated objects), values swapped for random JSON of another type, strings cut short.
Everything stays JSON (what getUpdates can carry).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

Json = dict[str, Any]

CHAT_TYPES = ("private", "group", "supergroup", "channel")
ENTITY_TYPES = (
    "mention",
    "hashtag",
    "bot_command",
    "url",
    "bold",
    "italic",
    "code",
    "pre",
    "text_link",
    "text_mention",
    "custom_emoji",
    "blockquote",
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
any_json = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)


def users(ids: st.SearchStrategy[int]) -> st.SearchStrategy[Json]:
    return st.fixed_dictionaries(
        {"id": ids, "is_bot": st.booleans(), "first_name": st.text(max_size=30)},
        optional={
            "last_name": st.text(max_size=30),
            "username": st.from_regex(r"[A-Za-z][A-Za-z0-9_]{4,31}", fullmatch=True),
            "language_code": st.sampled_from(["en", "de", "fa", "zh-hans"]),
            "is_premium": st.booleans(),
        },
    )


def chats(ids: st.SearchStrategy[int]) -> st.SearchStrategy[Json]:
    return st.fixed_dictionaries(
        {"id": ids, "type": st.sampled_from(CHAT_TYPES) | st.text(max_size=10)},
        optional={
            "title": st.text(max_size=40),
            "username": st.text(max_size=32),
            "first_name": st.text(max_size=30),
        },
    )


def entities(ids: st.SearchStrategy[int]) -> st.SearchStrategy[Json]:
    return st.fixed_dictionaries(
        {
            "type": st.sampled_from(ENTITY_TYPES),
            "offset": st.integers(-5, 5000),
            "length": st.integers(-5, 5000),
        },
        optional={
            "url": st.text(max_size=40),
            "user": users(ids),
            "language": st.text(max_size=10),
            "custom_emoji_id": st.text(max_size=20),
        },
    )


file_ids = st.fixed_dictionaries(
    {"file_id": st.text(min_size=1, max_size=30), "file_unique_id": st.text(max_size=16)},
    optional={"file_size": st.integers(0, 2**31)},
)
photo_sizes = st.builds(
    lambda f, w, h: {**f, "width": w, "height": h},
    file_ids,
    st.integers(0, 10000),
    st.integers(0, 10000),
)
content = st.one_of(
    st.fixed_dictionaries({"text": st.text(max_size=200)}),
    st.fixed_dictionaries(
        {"photo": st.lists(photo_sizes, min_size=1, max_size=3)},
        optional={"caption": st.text(max_size=100)},
    ),
    st.builds(
        lambda f, t: {"sticker": {**f, "type": t, "width": 512, "height": 512}},
        file_ids,
        st.sampled_from(["regular", "mask", "custom_emoji"]),
    ),
    st.builds(lambda f, d: {"voice": {**f, "duration": d}}, file_ids, st.integers(0, 3600)),
    st.builds(lambda f: {"document": f}, file_ids),
    st.just({}),
)


def messages(ids: st.SearchStrategy[int], *, depth: int = 1) -> st.SearchStrategy[Json]:
    """A Message; ``ids`` chooses chat and user ids (so senders can be allowed ones)."""
    optional: dict[str, st.SearchStrategy[Any]] = {
        "from": users(ids),
        "edit_date": st.integers(0, 2**32),
        "entities": st.lists(entities(ids), max_size=4),
        "message_thread_id": st.integers(1, 10**6),
    }
    if depth > 0:
        optional["reply_to_message"] = messages(ids, depth=depth - 1)
    base = st.fixed_dictionaries(
        {
            "message_id": st.integers(1, 2**31),
            "date": st.integers(0, 2**32),
            "chat": chats(ids),
        },
        optional=optional,
    )
    return st.builds(lambda b, c: {**b, **c}, base, content)


@st.composite
def damaged(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with fields dropped, retyped or cut short, anywhere in it."""
    if isinstance(value, dict):
        out: Json = {}
        for key, inner in value.items():
            action = draw(st.sampled_from(["keep", "keep", "keep", "drop", "retype", "deeper"]))
            if action == "keep":
                out[key] = inner
            elif action == "retype":
                out[key] = draw(any_json)
            elif action == "deeper":
                out[key] = draw(damaged(inner))
        return out
    if isinstance(value, list):
        kept = value[: draw(st.integers(0, len(value)))]
        return [draw(damaged(item)) for item in kept]
    if isinstance(value, str) and value:
        return value[: draw(st.integers(0, len(value) - 1))]
    if isinstance(value, int) and not isinstance(value, bool):
        return draw(st.sampled_from([value, -value, 0, str(value), float(value)]))
    return value


def message_payloads(ids: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    """What a ``message`` update may carry: whole messages, damaged ones, or junk."""
    whole = messages(ids)
    return st.one_of(whole, whole.flatmap(damaged), any_json)


def raw_updates(ids: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    """Whole getUpdates items, update_id and all, possibly damaged themselves."""
    update = st.builds(
        lambda uid, kind, payload: {"update_id": uid, kind: payload},
        st.integers(0, 2**31),
        st.sampled_from(["message", "edited_message", "channel_post", "callback_query"]),
        message_payloads(ids),
    )
    return st.one_of(update, update.flatmap(damaged), any_json)
