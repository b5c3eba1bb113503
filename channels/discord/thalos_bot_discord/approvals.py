"""Tool approvals as Discord buttons: the kit's flow (:mod:`thalos_bot.channels.
approvals.asking`), shown as three buttons and read from a press.

A press by anyone not in ``allowed_users`` is refused with a note only they see; the
owner's press is acknowledged at once and decides; the question is then edited through
the engine to say what was decided (the buttons go), as is a question withdrawn.
"""

from __future__ import annotations

import discord
import structlog

from thalos_bot.channels.approvals.asking import CLOSED, Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_discord.addressing import Place

log = structlog.get_logger(__name__)

NOT_YOURS = "Only the bot's owner can answer this question."
CHOICES: tuple[tuple[str, Verdict, discord.ButtonStyle], ...] = (
    ("Allow once", "approved", discord.ButtonStyle.success),
    ("Allow for session", "approved-session", discord.ButtonStyle.primary),
    ("Deny", "denied", discord.ButtonStyle.danger),
)


class Buttons(discord.ui.View):
    """One question's buttons; a press is read in :meth:`DiscordApprovals.press`."""

    def __init__(self, approvals: DiscordApprovals, place: Place, token: str) -> None:
        super().__init__(timeout=None)
        for label, verdict, style in CHOICES:
            button: discord.ui.Button[Buttons] = discord.ui.Button(label=label, style=style)

            async def pressed(interaction: discord.Interaction, choice: Verdict = verdict) -> None:
                await approvals.press(interaction, place, token, choice)

            button.callback = pressed  # type: ignore[method-assign]
            self.add_item(button)


class DiscordApprovals:
    def __init__(self, post: Post[Place, discord.ui.View], owners: frozenset[int]) -> None:
        self._asking = Asking[Place, discord.ui.View](post, "discord")
        self._owners = owners

    async def ask(self, place: Place, request: ApprovalRequest) -> ApprovalAnswer:
        token = Asking.token()
        text = f"🔐 **Allow this tool call?**\n`{request.tool}` `{request.preview}`"
        view = QuestionView[discord.ui.View](text, Buttons(self, place, token))
        return await self._asking.ask(place, request, token, view)

    def withdraw_all(self) -> None:
        self._asking.withdraw_all()

    async def press(
        self, interaction: discord.Interaction, place: Place, token: str, choice: Verdict
    ) -> None:
        user, message = interaction.user, interaction.message
        try:
            if user.id not in self._owners or message is None:
                log.info("discord_approval_refused_stranger", user=user.id)
                await interaction.response.send_message(NOT_YOURS, ephemeral=True)
                return
            decided = self._asking.decide(
                token, place, str(message.id), choice, who=user.display_name, decider=str(user.id)
            )
            if decided is None:
                await interaction.response.send_message(CLOSED, ephemeral=True)
            else:
                await interaction.response.defer()  # the engine edits the question
        except discord.HTTPException as exc:
            log.warning("discord_press_answer_failed", status=exc.status, code=exc.code)
