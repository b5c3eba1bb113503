"""An API conversation outlives the daemon: what it last saw is kept in the database, so
the history a frontend sends after a restart goes on in the same session (the model is
sent the earlier words once), instead of starting a new one."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.web.harness import web_daemon
from tests.web.test_openai_api import client, last_user_texts, make_key


def test_a_conversation_goes_on_in_its_session_after_a_restart(tmp_path: Path) -> None:
    first = [{"role": "user", "content": "my name is Ada"}]
    with AnthropicFake() as anthropic:
        with web_daemon(tmp_path, anthropic.base_url, "api = true") as daemon:
            key = make_key(daemon, "--person", "p1")
            anthropic.enqueue(text_reply("Hello Ada."))
            api = client(daemon, key)
            api.chat.completions.create(model="assistant", messages=first)  # type: ignore[arg-type]
        again = [
            *first,
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": "what is my name?"},
        ]
        with web_daemon(tmp_path, anthropic.base_url, "api = true") as daemon:
            anthropic.enqueue(text_reply("Ada."))
            done = client(daemon, key).chat.completions.create(
                model="assistant",
                messages=again,  # type: ignore[arg-type]
            )
            assert done.choices[0].message.content == "Ada."
            said = last_user_texts(anthropic)
    assert said.count("my name is Ada") == 1  # the same session, its history not sent twice
    assert said[-1] == "what is my name?"
