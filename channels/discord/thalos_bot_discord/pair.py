"""``thalos-bot discord pair``: find the owner's Discord id with a one-time code.

It connects as the bot, prints a code (the kit's :class:`PairingCode`: single use, ten
minutes), and waits for a direct message holding it; nobody is answered meanwhile. The
sender is shown and, once confirmed (``--yes``: at once), added to ``allowed_users`` in
``bot.toml`` (comments kept) and the section turned on; they are told in the DM.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import discord

from thalos_bot.channels.admission.pair_command import (
    EXIT_CONFIG,
    EXIT_NOT_ADDED,
    PAIRED,
    Ask,
    Show,
    confirm_and_add,
    expired,
    section_while_pairing,
    show_line,
)
from thalos_bot.channels.admission.pairing import CODE_TTL, PairingCode
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.config.loader import ConfigError
from thalos_bot_discord.client import (
    intents,
    no_pings,
    point_at,
    quiet_library_loggers,
    read_token,
)
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.wire import new_nonce


@dataclass(frozen=True, slots=True)
class Person:
    id: int
    name: str
    channel: int


async def pair(
    path: Path, *, yes: bool, ask: Ask | None, show: Show = show_line, ttl: float = CODE_TTL
) -> int:
    try:
        config = section_while_pairing(path, DiscordConfig, "discord")
        token = read_token()
    except (ConfigError, ChannelFatalError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_CONFIG
    quiet_library_loggers()
    point_at(config.base_url, config.gateway_url)
    code = PairingCode(ttl=ttl)
    found: list[Person] = []
    heard = anyio.Event()

    class Pairing(discord.Client):
        async def on_message(self, message: discord.Message) -> None:
            if (
                message.guild is None
                and not message.author.bot
                and not heard.is_set()
                and code.redeem(message.content)
            ):
                found.append(Person(message.author.id, str(message.author), message.channel.id))
                heard.set()

    client = Pairing(
        intents=intents(),
        guild_ready_timeout=config.guild_ready_timeout,
        allowed_mentions=no_pings(),
    )
    try:
        try:
            await client.login(token)
        except discord.LoginFailure:
            sys.stderr.write(
                "error: Discord refused the token in DISCORD_BOT_TOKEN; reset it in the "
                "Developer Portal\n"
            )
            return EXIT_CONFIG
        async with anyio.create_task_group() as group:
            group.start_soon(client.connect)
            show(
                f"Send this code to your bot in a direct message: {code.shown} "
                f"(valid for {int(ttl // 60) or 1} min)"
            )
            with anyio.move_on_after(code.remaining):
                await heard.wait()
            group.cancel_scope.cancel()
        if not found:
            show(expired("discord"))
            return EXIT_NOT_ADDED
        person = found[0]
        if not await confirm_and_add(
            path,
            person.id,
            channel="discord",
            title="Discord",
            described=f"{person.name} (id {person.id})",
            yes=yes,
            ask=ask,
            show=show,
        ):
            return EXIT_NOT_ADDED
        try:
            await client.get_partial_messageable(person.channel).send(PAIRED, nonce=new_nonce())
        except discord.HTTPException:
            show("(Telling them in the DM failed; the pairing stands.)")
        return 0
    finally:
        with anyio.CancelScope(shield=True):
            await client.close()
