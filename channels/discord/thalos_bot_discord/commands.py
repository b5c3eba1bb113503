"""The commands as Discord application (slash) commands.

They are registered globally at start (one bulk overwrite, so a renamed command does
not linger). Running one is answered at once (Discord wants an answer within 3 s) with
the command as typed, and the command goes to the pump as the text ``/<name> [arg]``,
exactly as a typed one would, so its reply follows as an ordinary message.
"""

from __future__ import annotations

from collections.abc import Callable

import discord
import structlog
from discord import app_commands

from thalos_bot.channels.notices import COMMAND_ARGUMENTS, COMMANDS

log = structlog.get_logger(__name__)

Run = Callable[[discord.Interaction, str], str | None]
"""Hands a command over as its text: None when taken, else what to tell the person."""
DUPLICATE = ""
"""What ``run`` returns for an interaction already taken (a replay): no answer at all,
since Discord refuses a second one (40060)."""


async def serve_commands(client: discord.Client, run: Run, *, register: bool) -> None:
    """The commands, run through ``run``; with ``register``, registered too (the
    application's id is known once the client is logged in)."""
    tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(client)
    for name, summary in COMMANDS:
        if name in COMMAND_ARGUMENTS:
            option, about = COMMAND_ARGUMENTS[name]

            async def with_value(
                interaction: discord.Interaction, value: str | None = None
            ) -> None:
                await _answer(interaction, run, value)

            described = app_commands.describe(value=about)(with_value)
            callback = app_commands.rename(value=option)(described)
        else:

            async def plain(interaction: discord.Interaction) -> None:
                await _answer(interaction, run)

            callback = plain  # type: ignore[assignment] # one signature per kind
        tree.add_command(
            app_commands.Command(name=name, description=summary[:100], callback=callback)
        )
    if not register:
        return
    try:
        synced = await tree.sync()
    except discord.HTTPException as exc:
        log.warning("discord_commands_refused", status=exc.status, code=exc.code)
        return
    log.info("discord_commands_registered", commands=[c.name for c in synced])


async def _answer(interaction: discord.Interaction, run: Run, value: str | None = None) -> None:
    name = interaction.command.name if interaction.command else ""
    text = f"/{name} {value}".strip() if value else f"/{name}"
    said = run(interaction, text)
    if said is None:
        await interaction.response.send_message(f"`{text}`")
    elif said != DUPLICATE:
        await interaction.response.send_message(said, ephemeral=True)
