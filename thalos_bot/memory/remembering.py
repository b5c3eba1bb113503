"""``/remember``: a person files a memory themselves, without asking the agent.

``/remember TEXT`` keeps it as theirs; ``/remember shared TEXT`` files it in the
household's shared scope (``[memory] shared_owner``, when ``shared_writes`` is on),
which everyone recalls. It is stored exactly as the ``remember`` tool stores it (the
same dedupe: restating a memory refreshes it).
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.config.memory import MemorySettings
from thalos_bot.memory.port import MemoryPort
from thalos_bot.memory.tools import NOT_SHARED

USAGE = "/remember TEXT keeps it for you; /remember shared TEXT files it for everyone."


@dataclass(frozen=True, slots=True)
class Remembering:
    store: MemoryPort
    settings: MemorySettings

    async def command(self, argument: str, caller: str) -> tuple[str, bool]:
        """What to tell the person, and whether it was stored."""
        words = argument.split(maxsplit=1)
        shared = bool(words) and words[0].lower() == "shared"
        text = (words[1] if len(words) > 1 else "") if shared else argument
        if not text.strip():
            return USAGE, False
        if caller == self.settings.shared_owner:
            return "This caller's memories are the shared ones; they cannot be changed here.", False
        owner = caller
        if shared:
            if not self.settings.shared_writes or self.settings.shared_owner is None:
                return NOT_SHARED, False
            owner = self.settings.shared_owner
        stored = await self.store.remember(owner, text.strip())
        said = "Already remembered; refreshed" if stored.deduped else "Remembered"
        whose = " for everyone" if shared else ""
        return f"{said}{whose}: {stored.record.text}", True
