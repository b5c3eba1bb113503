"""``thalos-bot skills review [NAME] [--accept]``: what a skill's files say now against
what was accepted, and accepting them.

Without a name it lists every skill that would not load (new, changed, flagged,
refused), as the files are now. With a name it shows where the skill is, every finding
of the screening, and the diff of its text files against the accepted ones (a new skill
in full); then, on a terminal, it asks; ``--accept`` accepts without asking. Accepting
pins exactly the files shown and runs a sync, so ``skills list`` shows it active; a
running daemon loads it at its next start.

Exit 0 when the listing or the review is shown (and accepted if asked), 1 when the
skill cannot be found, read or accepted, 3 when the operator declines.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

import anyio
import anyio.to_thread

from thalos_bot.cli.cmd_skills import SkillsCommand, _command, sync_library
from thalos_bot.skills.pinning import assess
from thalos_bot.skills.pins import Hold, Pin, PinStore
from thalos_bot.skills.review import ReviewError, acceptable, find_skill, render_diff, summary
from thalos_bot.skills.store import SkillStore
from thalos_bot.skills.sync import inspect_all
from thalos_bot.storage.database import Database, DatabaseError

EXIT_DECLINED = 3


def run_review(args: argparse.Namespace) -> int:
    """The handler for ``skills review``: ``args.config``, ``args.name``, ``args.accept``."""
    command = _command(args)
    if args.name is None:
        return list_waiting(command)
    return review_skill(command, args.name, accept=bool(args.accept))


async def _open(command: SkillsCommand) -> Database:
    from thalos_bot.service.schema import ALL_MIGRATIONS

    if command.database is None:
        raise DatabaseError("(none)", "there is no state database")
    return await Database.open(command.database, migrations=ALL_MIGRATIONS)


def _waiting(command: SkillsCommand) -> tuple[Hold, ...]:
    from thalos_bot.skills.discovery import scan_roots
    from thalos_bot.skills.grammar import GrammarOptions

    options = GrammarOptions(allow_unknown_keys=command.settings.allow_unknown_keys)
    scan = scan_roots(command.settings.resolved_roots(command.base_dir), options)
    inspected, _ = inspect_all(scan.skills)

    async def judge() -> tuple[Hold, ...]:
        async with await _open(command) as db:
            pins = await PinStore(db).pins()
            stored = await SkillStore(db).stored()
        now = datetime.now(UTC)
        return assess(inspected, pins, fresh=not pins and not stored, now=now).holds

    return anyio.run(judge)


def list_waiting(command: SkillsCommand) -> int:
    try:
        holds = _waiting(command)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not holds:
        print("every skill is as it was accepted; nothing waits for review")
        return 0
    print(f"skills not loaded until reviewed ({len(holds)}):")
    for hold in holds:
        print(f"  {hold.name}  {hold.reason}: {hold.details[0] if hold.details else ''}")
        print(f"    thalos-bot skills review {hold.name}")
    return 0


def _confirm() -> bool:
    if not sys.stdin.isatty():
        print("not accepted: run again with --accept to accept these files")
        return False
    answer = input("accept these files as they are now? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def review_skill(command: SkillsCommand, name: str, *, accept: bool) -> int:
    try:
        found = find_skill(command.settings, command.base_dir, name)

        async def pins() -> dict[str, Pin]:
            async with await _open(command) as db:
                return await PinStore(db).pins()

        known = anyio.run(pins)
    except (ReviewError, DatabaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    pin = known.get(name)
    print("\n".join(summary(found, pin)))
    diff = render_diff(pin, found.item.manifest)
    if diff:
        print()
        print("\n".join(diff))
    if pin is not None and pin.digest == found.item.manifest.digest:
        return 0
    try:
        chosen = acceptable(found, known, datetime.now(UTC))
    except ReviewError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print()
    if not accept and not _confirm():
        return EXIT_DECLINED

    async def record() -> None:
        async with await _open(command) as db:
            await PinStore(db).accept(chosen)

    anyio.run(record)
    print(f"accepted {name} ({len(found.item.manifest.files)} file(s), sha256 {chosen.digest})")
    code = sync_library(command)
    if code == 0:
        print("a running daemon loads it at its next start")
    return code
