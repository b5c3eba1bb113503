"""Slash-text that is not a command goes to the model; ``//`` escapes a command."""

from __future__ import annotations

import pytest

from tests.pump.harness import running_pump
from thalos_bot.channels import notices
from thalos_bot.domain.slash import command_word, unescaped
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.commands import parse_command

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "text",
    [
        "/etc/hosts looks wrong, why?",
        "/usr/bin/env",
        "/ 2",
        "/",
        "/path/",
        "/new/old",
        "/" + "a" * 33,
        "/héllo",
        "/new-ish",
        "/new@",
        "a /new in the middle",
    ],
)
def test_not_command_shaped(text: str) -> None:
    assert command_word(text) is None
    assert parse_command(text) is None


@pytest.mark.parametrize(
    ("text", "name", "bot", "rest"),
    [
        ("/new", "new", None, ""),
        ("  /NEW coder  ", "new", None, "coder"),
        ("/new@thalos_bot coder", "new", "thalos_bot", "coder"),
        ("/status\nand more", "status", None, "and more"),
        ("/" + "a" * 32, "a" * 32, None, ""),
        ("/frob x", "frob", None, "x"),
    ],
)
def test_command_shaped(text: str, name: str, bot: str | None, rest: str) -> None:
    word = command_word(text)
    assert word is not None
    assert (word.name, word.bot, word.rest) == (name, bot, rest)


def test_double_slash_unescapes_once() -> None:
    assert unescaped("//new") == "/new"
    assert unescaped("  //etc/x") == "/etc/x"
    assert unescaped("///x") == "//x"
    assert unescaped("/etc/hosts") == "/etc/hosts"
    assert parse_command("//new") is None


async def test_slash_text_reaches_the_model_and_commands_do_not() -> None:
    provider = ScriptedProvider()
    sent = ["/etc/hosts looks wrong, why?", "/usr/bin/env", "/ 2", "//new", "//help me"]
    async with running_pump(provider) as h:
        for text in [*sent, "/frobnicate now"]:
            await h.source.send(text).wait()
    seen = [request.messages[-1].text for request in provider.requests]
    assert seen == ["/etc/hosts looks wrong, why?", "/usr/bin/env", "/ 2", "/new", "/help me"]
    assert h.adapter.final_texts() == [f"You said: {text}" for text in seen]
    (refused,) = h.adapter.notices()
    assert "/frobnicate is not a command" in refused


def test_help_explains_the_escape() -> None:
    assert "//new" in notices.help_text()


def test_help_names_exit() -> None:
    assert "/exit (or Ctrl-D) quits" in notices.help_text()
