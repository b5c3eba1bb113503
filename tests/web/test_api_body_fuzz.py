"""Fuzzing the body of ``POST /v1/chat/completions``: any JSON gives a request or
OpenAI's 400 sentence, never an exception (which the listener would answer 500)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from thalos_bot.api.body import ChatRequest, digest, read_chat

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
roles = st.sampled_from(["user", "assistant", "system", "developer", "tool"]) | json_values
contents = (
    st.text(max_size=40)
    | json_values
    | st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "image_url"]) | json_values, "text": json_values}
        )
    )
)
messages = (
    st.fixed_dictionaries({"role": roles}, optional={"content": contents, "name": json_values})
    | json_values
)
bodies = (
    st.fixed_dictionaries(
        {
            "model": st.sampled_from(["assistant", ""]) | json_values,
            "messages": st.lists(messages, max_size=4) | json_values,
        },
        optional={
            "stream": json_values,
            "stream_options": json_values | st.fixed_dictionaries({"include_usage": json_values}),
            "user": json_values,
            "tools": json_values,
            "functions": json_values,
        },
    )
    | json_values
)


@settings(max_examples=examples(500), deadline=None, database=None)
@given(bodies)
def test_any_body_is_a_request_or_a_400_sentence(body: Any) -> None:
    read = read_chat(body)
    if isinstance(read, str):
        assert read
        return
    assert isinstance(read, ChatRequest)
    assert isinstance(read.model, str)
    assert read.model
    assert read.messages[-1]["role"] == "user"
    assert read.user is None or isinstance(read.user, str)
    digest(read.messages[:-1])


def test_the_shapes_found_by_the_fuzzer_are_refused_in_words() -> None:
    user = {"role": "user", "content": "hi"}
    assert read_chat({"model": "a", "messages": [{"role": []}, user]}) == (
        "each message must be an object with a role: system, developer, user, assistant or tool"
    )
    assert read_chat({"model": "a", "messages": [user], "stream_options": 5}) == (
        "Invalid type for 'stream_options': expected an object."
    )
    assert read_chat({"model": "a", "messages": [user], "user": {"id": 1}}) == (
        "Invalid type for 'user': expected a string."
    )
