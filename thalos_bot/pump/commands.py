"""Parsing the six slash commands.

A message is a command when its leading token is shaped like one (see
:mod:`thalos_bot.domain.slash`: ``/etc/hosts`` and ``/ 2`` are text for the model).
Matching ignores case and surrounding whitespace and accepts Telegram's ``/cmd@botname``
form. A command-shaped word that is not one of the six is refused by the pump; it never
reaches the model. The console and Telegram share this parser.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.channels.notices import COMMAND_NAMES
from thalos_bot.domain.slash import command_word

ALLOWED_WHILE_BUSY = frozenset({"cancel", "status", "help"})


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    """One of :data:`COMMAND_NAMES`, lower-case; empty for an unknown command."""
    argument: str
    word: str
    """The first word as typed (for the refusal notice)."""

    @property
    def known(self) -> bool:
        return bool(self.name)


def parse_command(text: str) -> Command | None:
    word = command_word(text)
    if word is None:
        return None
    name = word.name if word.name in COMMAND_NAMES else ""
    return Command(name, word.rest, word.word)
