"""Tool approvals as Discord buttons on the kit's flow (:mod:`thalos_bot.channels.
approvals.asking`); a stranger's press gets a note only they see."""

from __future__ import annotations

import discord
import structlog

from thalos_bot.channels.approvals.asking import CHOICES, CLOSED, NOT_YOURS, Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_discord.addressing import Place

log = structlog.get_logger(__name__)

STYLES: dict[Verdict, discord.ButtonStyle] = {
    "approved": discord.ButtonStyle.success,
    "approved-session": discord.ButtonStyle.primary,
    "denied": discord.ButtonStyle.danger,
}


class DiscordApprovals:
    def __init__(self, post: Post[Place, discord.ui.View], seats: Seats) -> None:
        self.asking = Asking[Place, discord.ui.View](post, "discord", seats)
        self.withdraw_all = self.asking.withdraw_all

    async def ask(self, place: Place, request: ApprovalRequest) -> ApprovalAnswer:
        token = Asking.token()
        buttons = discord.ui.View(timeout=None)
        for verdict, label in CHOICES:
            button: discord.ui.Button[discord.ui.View] = discord.ui.Button(
                label=label, style=STYLES[verdict]
            )

            async def pressed(interaction: discord.Interaction, choice: Verdict = verdict) -> None:
                await self.press(interaction, place, token, choice)

            button.callback = pressed  # type: ignore[method-assign]
            buttons.add_item(button)
        text = f"🔐 **Allow this tool call?**\n`{request.tool}` `{request.preview}`"
        return await self.asking.ask(place, request, token, QuestionView(text, buttons))

    async def press(
        self, interaction: discord.Interaction, place: Place, token: str, choice: Verdict
    ) -> None:
        user, message = interaction.user, interaction.message
        mid = str(message.id) if message else ""
        said = self.asking.answer(
            token if mid else None, place, mid, choice, user=str(user.id), who=user.display_name
        )
        try:
            if said is None or said == CLOSED:
                await interaction.response.send_message(said or NOT_YOURS, ephemeral=True)
            else:
                await interaction.response.defer()  # the engine edits the question
        except discord.HTTPException as exc:
            log.warning("discord_press_answer_failed", status=exc.status, code=exc.code)
