"""Who the bot's users are, as ``check`` and ``thalos-bot people`` print it: each person
with their roles and identities, then each transport's allowed users that no person
lists, with whom they run as (see :mod:`thalos_bot.domain.people`)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import anyio
from pydantic import BaseModel

from thalos_bot.channels.people import section_seats
from thalos_bot.channels.registry import discover, validate_channels
from thalos_bot.cli import state
from thalos_bot.cli.said import said
from thalos_bot.config.loader import LoadedConfig, load_settings
from thalos_bot.config.models import Settings
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.people import TERMINAL


def _roles(roles: object) -> str:
    named = (
        sorted(str(role) for role in roles) if isinstance(roles, list | tuple | frozenset) else []
    )
    return ", ".join(named) or "none"


def people_lines(settings: Settings, channels: Mapping[str, BaseModel]) -> list[str]:
    people = settings.directory()
    lines = [f"people ({len(people)}):" if len(people) else "people: none listed"]
    for person in people.listed:
        ids = [
            "terminal" if transport == TERMINAL else f"{transport} {user}"
            for transport, user in person.identities
        ]
        lines.append(
            f"  {person.id} ({person.name}): roles {_roles(person.roles)}; "
            f"identities: {', '.join(ids) or 'none'}"
        )
        for transport, user in person.identities:
            config = channels.get(transport)
            seats = None if config is None else section_seats(transport, config, people)
            if transport != TERMINAL and seats is not None and user not in seats.allowed:
                lines.append(
                    f"    note: {transport} {user} is not an allowed user of "
                    f"[channels.{transport}], so it is not let in"
                )
    for name, config in channels.items():
        seats = section_seats(name, config, people)
        unlisted = [] if seats is None else [u for u in seats.allowed if people.of(name, u) is None]
        if seats is None or not unlisted:
            continue
        runs = [
            f"{user} as {context.id} (roles {_roles(sorted(context.roles))})"
            for user in unlisted
            for context in [seats.context(user)]
        ]
        lines.append(f"  {name}, allowed but not listed: {'; '.join(runs)}")
    return lines


def run(args: argparse.Namespace) -> int:
    """``thalos-bot people [link CODE | unlink TRANSPORT ID]``."""
    loaded = load_settings(args.config)
    channels = validate_channels(loaded.settings, loaded.label, discover())
    action: str | None = getattr(args, "people_command", None)
    if action is None:
        lines = people_lines(loaded.settings, channels)
        lines += anyio.run(_linked_lines, loaded)
        print("\n".join(lines))
        return 0
    return said(args, _act)


async def _linked_lines(loaded: LoadedConfig) -> list[str]:
    async with state.opened(loaded) as stores:
        links = [] if stores is None else await stores.links.listing()
    live = [link for link in links if link.unlinked_at is None]
    if not live:
        return ["linked from a chat (/link): none"]
    return ["linked from a chat (/link):"] + [
        f"  {link.transport} {link.user_id} as {link.principal} "
        f"(since {link.linked_at:%Y-%m-%d %H:%M} UTC)"
        for link in live
    ]


async def _act(loaded: LoadedConfig, args: argparse.Namespace) -> tuple[str, bool]:
    async with state.opened(loaded) as stores:
        if stores is None:
            return f"{state.where(loaded)} does not exist yet: start the bot once first", False
        now = utc_now()
        if args.people_command == "link":
            if loaded.settings.directory().of(TERMINAL, TERMINAL) is not None:
                return (
                    "The terminal is listed in [[people]] (terminal = true); change it there.",
                    False,
                )
            claimed = await stores.links.claim(args.code, TERMINAL, TERMINAL, now)
            if claimed is None:
                return "That link code is unknown, used or expired.", False
            return f"Linked: the terminal is now {claimed!r}.", True
        ended = await stores.links.unlink(args.transport, str(args.user), now)
        if ended is None:
            return f"{args.transport} {args.user} is not linked to anyone.", False
        return f"Unlinked: {args.transport} {args.user} is no longer {ended!r}.", True
