"""Tool approvals as Discord buttons (:mod:`thalos_bot.channels.approvals.buttons`); a
stranger's press gets a note only they see. A press is read from the gateway's
interaction, not from a view's callback: the question may have been asked by another
replica, whose view this process never saw (the kit relays that press to it)."""

from __future__ import annotations

from collections.abc import Mapping

import discord
import structlog

from thalos_bot.channels.approvals.asking import CLOSED, NOT_YOURS, Post
from thalos_bot.channels.approvals.buttons import Button, ButtonApprovals, ButtonData
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalRequest, Verdict
from thalos_bot_discord.addressing import Place

log = structlog.get_logger(__name__)

DATA = ButtonData("thalos:{verdict}:{token}")  # a button's custom id
STYLES: dict[Verdict, discord.ButtonStyle] = {
    "approved": discord.ButtonStyle.success,
    "approved-session": discord.ButtonStyle.primary,
    "denied": discord.ButtonStyle.danger,
}


def question(request: ApprovalRequest) -> str:
    return f"🔐 **Allow this tool call?**\n`{request.tool}` `{request.preview}`"


def markup(_: str, buttons: list[Button]) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for b in buttons:
        view.add_item(discord.ui.Button(label=b.label, style=STYLES[b.verdict], custom_id=b.data))
    return view


class DiscordApprovals(ButtonApprovals[Place, discord.ui.View]):
    def __init__(self, post: Post[Place, discord.ui.View], seats: Seats) -> None:
        super().__init__(post, "discord", seats, DATA, question=question, markup=markup)

    async def on_interaction(self, interaction: discord.Interaction, place: Place | None) -> None:
        """A component interaction in ``place`` (None: not a chat this bot serves, or a
        stranger's press); one that is not a question's button is left alone."""
        data: Mapping[str, object] = interaction.data or {}
        custom_id = str(data.get("custom_id", ""))
        if DATA.read(custom_id) is None:
            return
        user, message = interaction.user, interaction.message
        mid = str(message.id) if message else ""
        said = self.pressed(custom_id, place, mid, user=str(user.id), who=user.display_name)
        try:
            if said is None or said == CLOSED:  # told privately
                await interaction.response.send_message(said or NOT_YOURS, ephemeral=True)
            else:  # the engine edits the question (here, or where the kit relayed it)
                await interaction.response.defer()
        except discord.HTTPException as exc:
            log.warning("discord_press_answer_failed", status=exc.status, code=exc.code)
