"""``thalos-bot api key create|list|revoke``: the OpenAI-compatible API's keys.

A key acts as one person (their memory, roles and budget), optionally with one agent
only. ``create`` prints the key once; only its hash is kept."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    add_config: Callable[[argparse.ArgumentParser], None],
) -> None:
    api = commands.add_parser("api", help="the OpenAI-compatible API: its keys")
    groups = api.add_subparsers(dest="api_group", metavar="WHAT", required=True)
    key = groups.add_parser("key", help="make, list or revoke API keys")
    actions = key.add_subparsers(dest="api_action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="make a key for a person (printed once)")
    create.add_argument("--person", required=True, help="whom it acts as (a [[people]] id)")
    create.add_argument("--agent", help="the only agent it may use (default: any)")
    create.add_argument("--expires", help='how long it lasts, e.g. "90d" (default: until revoked)')
    listing = actions.add_parser("list", help="every key: its id, person, agent and state")
    revoke = actions.add_parser("revoke", help="revoke a key by its id (kept on record)")
    revoke.add_argument("id")
    for sub in (create, listing, revoke):
        add_config(sub)
        sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from thalos_bot.cli.said import said

    return said(args, _act)


async def _act(loaded: LoadedConfig, args: argparse.Namespace) -> tuple[str, bool]:
    from datetime import timedelta

    from thalos_bot.cli import state
    from thalos_bot.config.types import parse_duration
    from thalos_bot.domain.clock import utc_now

    now = utc_now()
    if args.api_action == "create":
        agents = {agent.id for agent in loaded.settings.agents}
        if args.agent is not None and args.agent not in agents:
            known = ", ".join(sorted(agents))
            return f"--agent: {args.agent!r} is not an agent (agents: {known})", False
        try:
            lasts = None if args.expires is None else parse_duration(args.expires)
            expires = None if lasts is None else now + timedelta(seconds=lasts)
        except ValueError as exc:
            return f"--expires: {exc}", False
    async with state.opened(loaded) as stores:
        if stores is None:
            return f"{state.where(loaded)} does not exist yet: start the bot once first", False
        keys = stores.api_keys
        if args.api_action == "create":
            record, key = await keys.create(args.person, args.agent, now, expires)
            until = "until revoked" if expires is None else f"until {expires:%Y-%m-%d %H:%M} UTC"
            return (
                f"{key}\n\nThat is the key for {record.person} ({record.id}), valid {until}; it "
                "is shown this once. Give it to the client as its OpenAI API key, with base URL "
                "<the web page's address>/v1."
            ), True
        if args.api_action == "list":
            rows = await keys.listing()
            if not rows:
                return "No API keys.", True
            return "\n".join(
                f"{k.id}  {k.person}  agent {k.agent or 'any'}  "
                f"{k.usable(now) or 'usable'}  made {k.created_at:%Y-%m-%d}"
                for k in rows
            ), True
        if await keys.revoke(args.id, now):
            return f"Revoked {args.id}.", True
        return f"{args.id} is not a key that can be revoked (unknown, or revoked already).", False
