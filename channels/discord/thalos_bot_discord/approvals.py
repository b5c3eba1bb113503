"""Tool approvals as Discord buttons on the kit's flow (:mod:`thalos_bot.channels.
approvals.asking`); a stranger's press gets a note only they see.

Each button's custom id names the verdict and the question's token, and a press is read
from the gateway's interaction (:meth:`DiscordApprovals.pressed`), not from a view's
callback: the question may have been asked by another replica, whose view this process
never saw (the kit relays that press to it)."""

from __future__ import annotations

from collections.abc import Mapping

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


PREFIX = "thalos"


def custom_id(verdict: Verdict, token: str) -> str:
    """A button's custom id: the verdict and the question's token."""
    return f"{PREFIX}:{verdict}:{token}"


class DiscordApprovals:
    def __init__(self, post: Post[Place, discord.ui.View], seats: Seats) -> None:
        self.asking = Asking[Place, discord.ui.View](post, "discord", seats)
        self.withdraw_all = self.asking.withdraw_all

    async def ask(self, place: Place, request: ApprovalRequest) -> ApprovalAnswer:
        token = Asking.token()
        buttons = discord.ui.View(timeout=None)
        for verdict, label in CHOICES:
            buttons.add_item(
                discord.ui.Button(
                    label=label, style=STYLES[verdict], custom_id=custom_id(verdict, token)
                )
            )
        text = f"🔐 **Allow this tool call?**\n`{request.tool}` `{request.preview}`"
        return await self.asking.ask(place, request, token, QuestionView(text, buttons))

    async def pressed(self, interaction: discord.Interaction, place: Place | None) -> None:
        """A component interaction in ``place`` (None: not a chat this bot serves, or a
        stranger's press); one that is not a question's button is left alone."""
        data: Mapping[str, object] = interaction.data or {}
        prefix, _, rest = str(data.get("custom_id", "")).partition(":")
        verdict, _, token = rest.partition(":")
        choice = next((v for v in STYLES if v == verdict), None)
        if prefix != PREFIX or choice is None or not token:
            return
        if place is None:
            await _tell(interaction, NOT_YOURS)
            return
        await self.press(interaction, place, token, choice)

    async def press(
        self, interaction: discord.Interaction, place: Place, token: str, choice: Verdict
    ) -> None:
        user, message = interaction.user, interaction.message
        mid = str(message.id) if message else ""
        said = self.asking.answer(
            token if mid else None, place, mid, choice, user=str(user.id), who=user.display_name
        )
        if said is None or said == CLOSED:
            await _tell(interaction, said or NOT_YOURS)
            return
        try:
            # The engine edits the question (this replica's, or the one that asked it,
            # when the kit relayed the press: RELAYED).
            await interaction.response.defer()
        except discord.HTTPException as exc:
            log.warning("discord_press_answer_failed", status=exc.status, code=exc.code)


async def _tell(interaction: discord.Interaction, text: str) -> None:
    """Tell the presser ``text``, privately."""
    try:
        await interaction.response.send_message(text, ephemeral=True)
    except discord.HTTPException as exc:
        log.warning("discord_press_answer_failed", status=exc.status, code=exc.code)
