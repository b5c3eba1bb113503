"""``thalos-bot memory list|show|forget|export|add``: the operator's view of memory.

Unlike the model's tools, these name any owner (``--owner``), and ``forget`` is a hard
delete: the row, its index entries and the freed bytes. ``add`` is how project-wide
knowledge gets under the shared owner, which the tools never write.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig
    from thalos_bot.config.memory import MemorySettings
    from thalos_bot.memory.assembly import MemoryParts
    from thalos_bot.memory.embedding.base import Embedder
    from thalos_bot.memory.port import MemoryPort
    from thalos_bot.memory.records import MemoryRecord
    from thalos_bot.memory.redact import RedactionReport
    from thalos_bot.memory.reindex import ReindexLoop
    from thalos_bot.memory.store import MemoryStore
    from thalos_bot.storage.database import Database
    from thalos_bot.storage.pg.memory_store import PgMemoryStore

    Store = MemoryStore | PgMemoryStore

Handler = Callable[[argparse.Namespace], int]
PREVIEW_CHARS = 60


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    handler: Handler | None = None,
) -> argparse.ArgumentParser:
    """Add ``memory`` and its subcommands to ``commands``. Every subcommand takes
    ``--config``; ``handler`` (default :func:`run`) receives the parsed arguments."""
    memory = commands.add_parser("memory", help="list, show, export, add or delete memories")
    actions = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="memories, newest first")
    _owner(listing)
    listing.add_argument("--kind", help="only this kind")
    listing.add_argument("--archived", action="store_true", help="include archived ones")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (50)")
    listing.add_argument("--offset", type=int, default=0, help="skip this many first")

    show = actions.add_parser("show", help="one memory in full")
    show.add_argument("id")
    _owner(show, "only if it belongs to OWNER")

    forget = actions.add_parser(
        "forget", help="delete a memory for good: the record, its index entries and bytes"
    )
    forget.add_argument("id")
    _owner(forget, "only if it belongs to OWNER")
    forget.add_argument(
        "--yes", "-y", action="store_true", help="do not ask first (asked only in a terminal)"
    )
    forget.add_argument(
        "--everywhere",
        action="store_true",
        help="also replace the text with [forgotten] in stored conversations, and reset"
        " compaction summaries built over them",
    )

    reindex = actions.add_parser(
        "reindex", help="embed memories again for recall by meaning ([memory.embeddings])"
    )
    reindex.add_argument(
        "--pending-only", action="store_true", help="only those still waiting for a vector"
    )
    reindex.add_argument(
        "--restart",
        action="store_true",
        help="start over even when an interrupted reindex could continue",
    )
    for long_work in (forget, reindex):
        long_work.add_argument(
            "--quiet",
            "-q",
            action="store_true",
            help="no progress bar or progress lines (stderr)",
        )

    export = actions.add_parser("export", help="every memory as JSON lines on stdout")
    _owner(export)

    add = actions.add_parser("add", help="store a memory for OWNER (e.g. the shared owner)")
    add.add_argument("text")
    add.add_argument(
        "--owner", help="whose memory it is (default: the console's principal_id, e.g. local)"
    )
    add.add_argument("--kind", help="fact, preference, decision, learning, note, ...")
    add.add_argument("--tag", action="append", default=[], dest="tags", help="repeatable")
    add.add_argument("--importance", type=int, help="1 to 5 (3)")
    add.add_argument("--agent", help="keep it with this agent only")

    from thalos_bot.cli.cmd_memory_search import add_parser as add_search

    search = add_search(actions)
    for sub in (listing, show, forget, reindex, export, add, search):
        sub.add_argument(
            "--config",
            "-c",
            type=Path,
            metavar="PATH",
            help="the bot.toml to use (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
        )
        sub.set_defaults(handler=handler or run)
    return memory


def _owner(parser: argparse.ArgumentParser, text: str = "only OWNER's memories") -> None:
    parser.add_argument("--owner", help=text)


def run(args: argparse.Namespace) -> int:
    """The CLI handler. Exit 0 on success, 1 when a memory or the database is missing."""
    import anyio

    from thalos_bot.config.loader import load_settings
    from thalos_bot.telemetry.logging import configure_logging

    configure_logging("warning", "auto", sys.stderr)
    loaded = load_settings(args.config)
    command: str = args.memory_command
    if command in {"add", "search"} and args.owner is None:
        args.owner = _console_principal(loaded.settings.channels.get("console", {}), loaded.label)
    if loaded.settings.storage.target.kind == "postgresql":
        shared: int = anyio.run(_run_shared, args, loaded)
        return shared
    path = loaded.database_path
    if command != "add" and not path.exists():
        print(f"no memories: there is no database at {path}", file=sys.stderr)
        return 0 if command in {"list", "export"} else 1
    result: int = anyio.run(_run, args, path, loaded.settings.memory)
    return result


async def _run(args: argparse.Namespace, path: Path, settings: MemorySettings) -> int:
    from thalos_bot.memory.assembly import build_memory
    from thalos_bot.memory.store import MemoryStore
    from thalos_bot.service.schema import ALL_MIGRATIONS
    from thalos_bot.storage.database import Database

    async def on_sqlite() -> int:
        async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
            return await _dispatch(
                args,
                settings,
                parts=lambda: build_memory(db, settings),
                plain=MemoryStore(db),
                reindexer=_sqlite_reindexer(db),
                progress_db=db,
            )

    return await _reporting(on_sqlite)


async def _run_shared(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from thalos_bot.cli import state
    from thalos_bot.memory.embedders import build_embedder
    from thalos_bot.storage.pg.database import PgDatabase
    from thalos_bot.storage.pg.memory_store import PgMemoryStore

    settings = loaded.settings.memory

    async def on_postgres() -> int:
        async with state.opened(loaded) as stores:
            assert stores is not None  # a server is always asked
            shared, local = stores.shared, stores.local
            assert isinstance(shared, PgDatabase)

            def make(embedder: Embedder) -> ReindexLoop:
                from thalos_bot.storage.pg.memory_reindex import PgReindexer
                from thalos_bot.storage.pg.memory_vectors import PgVectorIndex

                least = settings.embeddings.min_similarity
                return PgReindexer(shared, PgVectorIndex(embedder, min_similarity=least), local)

            return await _dispatch(
                args,
                settings,
                parts=lambda: stores.memory(settings, build_embedder(settings.embeddings)),
                plain=PgMemoryStore(shared),
                reindexer=make,
                progress_db=local,
            )

    return await _reporting(on_postgres)


async def _dispatch(
    args: argparse.Namespace,
    settings: MemorySettings,
    *,
    parts: Callable[[], MemoryParts],
    plain: Store,
    reindexer: Callable[[Embedder], ReindexLoop],
    progress_db: Database,
) -> int:
    """One command on either engine: ``parts`` builds memory with its embedder (for
    ``search`` and ``add``), ``plain`` is the store alone (for the rest)."""
    command: str = args.memory_command
    if command == "reindex":
        return await _reindex(reindexer, progress_db, settings, args)
    if command == "search":
        from thalos_bot.cli.cmd_memory_search import search

        return await search(parts(), settings, args)
    if command == "add":  # embedded at once, or left pending for the daemon
        built = parts()
        try:
            return await _add(built.store, args)
        finally:
            await built.embedder.aclose()
    return await _COMMANDS[command](plain, args)


async def _reporting(run: Callable[[], Awaitable[int]]) -> int:
    """``run``, with a database or memory error as one line (exit 1 or 2)."""
    from thalos_bot.memory.records import InvalidMemoryError
    from thalos_bot.storage.database import DatabaseError

    try:
        return await run()
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except InvalidMemoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


async def _list(store: Store, args: argparse.Namespace) -> int:
    from thalos_bot.memory.render import one_line

    records = await store.list(
        args.owner,
        kind=args.kind,
        limit=args.limit,
        offset=args.offset,
        include_archived=args.archived,
    )
    total = await store.count(args.owner, kind=args.kind, include_archived=args.archived)
    if not records:
        print("no memories" if total == 0 else f"no memories past {args.offset} (of {total})")
        return 0
    rows = [("ID", "OWNER", "KIND", "UPDATED", "TEXT")]
    for r in records:
        text = one_line(r.text)
        if len(text) > PREVIEW_CHARS:
            text = text[: PREVIEW_CHARS - 1] + "…"
        if r.archived:
            text = "(archived) " + text
        updated = r.updated_at.strftime("%Y-%m-%d %H:%M")
        rows.append((r.id, r.owner, r.kind, updated, text))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join([*(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)), row[4]]))
    if total > args.offset + len(records):
        print(f"({len(records)} of {total}; --offset {args.offset + len(records)} for more)")
    return 0


async def _show(store: Store, args: argparse.Namespace) -> int:
    record = await store.get(args.id, owner=args.owner)
    if record is None:
        whose = f" of {args.owner!r}" if args.owner else ""
        print(f"error: there is no memory{whose} with the id {args.id!r}", file=sys.stderr)
        return 1
    for key, value in as_json(record).items():
        if key != "text":
            shown = ", ".join(value) if isinstance(value, list) else value
            print(f"{key}: {'-' if shown in (None, '') else shown}")
    print(f"text:\n{record.text}")
    return 0


def _console_principal(section: dict[str, Any], label: str) -> str:
    from thalos_bot.config.loader import validate
    from thalos_bot.console.config import ConsoleConfig

    config = validate(ConsoleConfig, section, label, "channels.console")
    return config.principal_id


async def _forget(store: Store, args: argparse.Namespace) -> int:
    missing = f"there is no memory{f' of {args.owner!r}' if args.owner else ''} with the id"
    if not args.yes and sys.stdin.isatty():
        record = await store.get(args.id, owner=args.owner)
        if record is None:
            print(f"error: {missing} {args.id!r}", file=sys.stderr)
            return 1
        if not await _confirm(record):
            print("kept: nothing was deleted")
            return 1
    record = await store.get(args.id, owner=args.owner)
    if record is None:
        print(f"error: {missing} {args.id!r}", file=sys.stderr)
        return 1
    report = None
    if args.everywhere:
        from thalos_bot.cli.stopping import EXIT_STOPPED

        report = await _redact(store, record, args.quiet)
        if report is None:
            return EXIT_STOPPED
    if not await store.delete(args.id, owner=args.owner):
        print(f"error: {missing} {args.id!r}", file=sys.stderr)
        return 1
    from thalos_bot.storage.pg.memory_store import PgMemoryStore

    if isinstance(store, PgMemoryStore):
        tables = "memories, session_messages, session_context" if report else "memories"
        print(
            f"deleted {args.id}: the record and its index entries; PostgreSQL keeps the"
            " old row versions until VACUUM (and in its WAL and backups): run"
            f" `VACUUM {tables}` for none to remain in the live files"
        )
    else:
        print(f"deleted {args.id}: the record, its index entries and its stored bytes")
    if report is not None:
        print(
            f"redacted {report.messages} stored message(s) in {report.sessions} session(s);"
            f" reset {report.summaries} compaction summary(ies) for regeneration"
        )
    return 0


async def _redact(store: Store, record: MemoryRecord, quiet: bool) -> RedactionReport | None:
    """``--everywhere``, before the record goes: it is archived first, so nothing
    recalls it into a conversation while the history is scanned. ``None`` when Ctrl-C
    stopped it (what it redacted stays; the record stays archived for a second run)."""
    from thalos_bot.cli.progress import show_progress
    from thalos_bot.cli.stopping import run_stoppably
    from thalos_bot.memory.redact import redact_everywhere, sqlite_tables
    from thalos_bot.storage.pg.memory_store import PgMemoryStore, session_tables

    if not record.archived:
        await store.archive(record.owner, record.id)
    tables = (
        session_tables(store.database)
        if isinstance(store, PgMemoryStore)
        else sqlite_tables(store.database)
    )
    with show_progress("memory forget", 0, quiet=quiet) as progress:
        outcome = await run_stoppably(
            lambda: redact_everywhere(tables, record.text, on_progress=progress.update)
        )
    if outcome.stopped or outcome.value is None:
        await store.checkpoint()
        print(
            f"stopped: {progress.done} of {progress.total} stored messages scanned; what was"
            f" redacted stays redacted. {record.id} is archived (never recalled) but not yet"
            f" deleted: run `thalos-bot memory forget {record.id} --everywhere` again to finish",
            file=sys.stderr,
        )
        return None
    return outcome.value


def _sqlite_reindexer(db: Database) -> Callable[[Embedder], ReindexLoop]:
    from thalos_bot.memory.reindex import Reindexer
    from thalos_bot.memory.vectors import VectorIndex

    return lambda embedder: Reindexer(db, VectorIndex(embedder))


async def _reindex(
    make: Callable[[Embedder], ReindexLoop],
    progress_db: Database,
    settings: MemorySettings,
    args: argparse.Namespace,
) -> int:
    """Embed what is pending (or everything); ``make`` builds the engine's reindexer,
    whose progress row ``progress_db`` keeps (a full run stopped half way resumes)."""
    from thalos_bot.cli.progress import show_progress
    from thalos_bot.cli.stopping import EXIT_STOPPED, run_stoppably
    from thalos_bot.memory.embedders import build_embedder
    from thalos_bot.memory.embedding.base import EmbedderError

    embedder = build_embedder(settings.embeddings)
    try:
        if not embedder.available:
            print("nothing to do: recall by meaning is off ([memory.embeddings] mode)")
            return 0
        reindexer = make(embedder)
        pending_only: bool = args.pending_only
        kind = "pending" if pending_only else "full"
        if not pending_only and not args.restart and await _interrupted_full(progress_db):
            left = await reindexer.pending_count()
            print(
                f"continuing the interrupted reindex: {left} memories still pending"
                " (--restart to start over)"
            )
            pending_only = True
        with show_progress("memory reindex", 0, quiet=args.quiet) as progress:
            try:
                outcome = await run_stoppably(
                    lambda: reindexer.reindex(
                        pending_only=pending_only, on_progress=progress.update, kind=kind
                    )
                )
            except EmbedderError:
                progress.close()
                left = await reindexer.pending_count()
                print(
                    f"error: the embedder ({embedder.model}) failed; {left} memories are still"
                    " waiting for a vector (recall finds them by keywords meanwhile)",
                    file=sys.stderr,
                )
                return 1
        report = outcome.value
        if outcome.stopped or report is None:
            left = await reindexer.pending_count()
            print(
                f"stopped: {progress.done} of {progress.total} memories done; {left} still"
                " pending. Run `thalos-bot memory reindex` again to continue with them"
                " (recall finds them by keywords meanwhile)",
                file=sys.stderr,
            )
            return EXIT_STOPPED
    finally:
        await embedder.aclose()
    print(f"embedded {report.embedded} memories with {report.model}; {report.pending} pending")
    return 0


async def _interrupted_full(db: Database) -> bool:
    """The last reindex was a full one that did not finish (stopped, or the embedder
    failed): the pending rows are what is left of it."""
    from thalos_bot.storage.progress import MEMORY_REINDEX, read_progress

    rows = await read_progress(db, MEMORY_REINDEX)
    return any(r.state in {"interrupted", "failed"} and r.detail == "full" for r in rows)


async def _confirm(record: MemoryRecord) -> bool:
    import anyio

    from thalos_bot.memory.render import one_line

    text = one_line(record.text)
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    question = f"Delete {record.id} of {record.owner} for good ({text})? [y/N] "
    try:
        answer = await anyio.to_thread.run_sync(input, question)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


async def _export(store: Store, args: argparse.Namespace) -> int:
    async for record in store.records(args.owner):
        sys.stdout.write(json.dumps(as_json(record), ensure_ascii=False) + "\n")
    return 0


async def _add(store: MemoryPort, args: argparse.Namespace) -> int:
    stored = await store.remember(
        args.owner,
        args.text,
        kind=args.kind,
        tags=args.tags,
        importance=args.importance,
        agent=args.agent,
    )
    said = "refreshed" if stored.deduped else "added"
    print(f"{said} {stored.record.id} ({stored.record.kind}) for {stored.record.owner}")
    return 0


def as_json(record: MemoryRecord) -> dict[str, Any]:
    """One record as an export line holds it."""
    return {
        "id": record.id,
        "owner": record.owner,
        "agent": record.agent,
        "kind": record.kind,
        "text": record.text,
        "tags": list(record.tags),
        "importance": record.importance,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "last_recalled_at": record.last_recalled_at.isoformat()
        if record.last_recalled_at
        else None,
        "archived": record.archived,
    }


_COMMANDS: dict[str, Callable[[Store, argparse.Namespace], Awaitable[int]]] = {
    "list": _list,
    "show": _show,
    "forget": _forget,
    "export": _export,
    "add": _add,
}


def main(argv: list[str] | None = None) -> int:
    """``python -m thalos_bot.cli.cmd_memory memory ...``: the command on its own."""
    from thalos_bot.config.loader import ConfigError

    parser = argparse.ArgumentParser(prog="thalos-bot")
    register(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
