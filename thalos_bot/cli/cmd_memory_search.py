"""``thalos-bot memory search TEXT``: what recall would bring into a turn, with scores.

It asks the store exactly as auto-recall does (the words index and, where configured,
the meaning index, fused), for the owner and the shared owner, without stamping
``last_recalled_at``: looking does not change what is remembered.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thalos_bot.config.memory import MemorySettings
    from thalos_bot.memory.assembly import MemoryParts

PREVIEW = 70


def add_parser(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    search = actions.add_parser("search", help="what recall would bring for TEXT, with scores")
    search.add_argument("text", metavar="TEXT")
    search.add_argument(
        "--owner", help="whose memories (default: the console's principal_id, e.g. local)"
    )
    search.add_argument("--agent", help="as this agent recalls (its own and shared memories)")
    search.add_argument("--limit", type=int, default=10, help="at most this many (10)")
    return search


async def search(parts: MemoryParts, settings: MemorySettings, args: argparse.Namespace) -> int:
    """Recall through ``parts`` (on either engine); their embedder is closed after."""
    from thalos_bot.domain.security import SecurityContext
    from thalos_bot.memory.recall import recall_owners

    try:
        owners = recall_owners(SecurityContext.of(args.owner), settings.shared_owner)
        found = await parts.store.recall(
            owners, args.text, agent=args.agent, top_k=max(1, args.limit), touch=False
        )
    finally:
        await parts.embedder.aclose()
    if not found:
        print(f"nothing recalled for {args.text!r} (owners: {', '.join(owners)})")
        return 0
    print(f"score   id  (recalled for {', '.join(owners)}, best first)")
    for item in found:
        record = item.record
        flat = " ".join(record.text.split())
        text = flat if len(flat) <= PREVIEW else flat[: PREVIEW - 1] + "…"
        print(f"{item.score:6.3g}  {record.id}  [{record.owner}, {record.kind}]  {text}")
    return 0
