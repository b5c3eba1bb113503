"""Parsing the six slash commands.

A message is a command when its first word starts with ``/``. Matching ignores case and
surrounding whitespace and accepts Telegram's ``/cmd@botname`` form. A slash word that
is not one of the six is refused by the pump; it never reaches the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.pump.notices import COMMAND_NAMES

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
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    word, _, rest = stripped.partition(" ")
    if "\n" in word:
        word, _, more = word.partition("\n")
        rest = f"{more} {rest}".strip()
    name = word[1:].split("@", 1)[0].lower()
    if name not in COMMAND_NAMES:
        return Command("", rest.strip(), word)
    return Command(name, rest.strip(), word)
