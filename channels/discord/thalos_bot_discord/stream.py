"""One turn's answer in one Discord conversation, as it is written and edited.

A :class:`TurnView` holds the text streamed so far and the messages showing it. Each
show renders the text (Discord dialect), splits it into parts of 2,000 characters, edits
the parts whose text changed and posts the new ones. A part is posted with the nonce
``<base>.<index>``, so a post retried after a failure in transit, even by a restarted
daemon resuming the turn's final from its outbox row, never shows twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from thalos_bot_discord.chunking import split
from thalos_bot_discord.markdown import to_discord
from thalos_bot_discord.wire import new_nonce

if TYPE_CHECKING:
    from thalos_bot.channels.final import DeliveryJournal


@dataclass
class TurnView:
    nonce: str = field(default_factory=new_nonce)
    text: str = ""
    ids: list[int] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    wake_queued: bool = False
    final: str | None = None
    journal: DeliveryJournal | None = None
    ended: bool = False

    def parts(self) -> list[str]:
        return split(to_discord(self.final if self.final is not None else self.text))

    def part_nonce(self, index: int) -> str:
        return f"{self.nonce}.{index}"

    def progress(self) -> dict[str, object]:
        return {"nonce": self.nonce, "ids": list(self.ids), "shown": list(self.shown)}

    def resume(self, progress: dict[str, object]) -> None:
        nonce = progress.get("nonce")
        ids = progress.get("ids")
        shown = progress.get("shown")
        if isinstance(nonce, str):
            self.nonce = nonce
        if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
            self.ids = [int(i) for i in ids]
        if isinstance(shown, list) and all(isinstance(s, str) for s in shown):
            self.shown = [str(s) for s in shown]
