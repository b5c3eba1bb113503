"""Tool approvals as Discord buttons, answered by the owner only.

A question is a message with three buttons (allow once, allow for the session, deny),
posted in the conversation after what is queued there. A press by anyone not in
``allowed_users`` is refused with a note only they see; the owner's press edits the
question to say what was decided (the buttons go) and answers the tool gate. A question
withdrawn (timeout, ``/cancel``) or left open at shutdown is edited to say it no longer
counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import discord
import structlog

from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.tools.approval import SHUTDOWN, ApprovalAnswer, ApprovalRequest, Verdict

if TYPE_CHECKING:
    from thalos_bot.domain.ids import ConversationId
    from thalos_bot_discord.adapter import DiscordAdapter

log = structlog.get_logger(__name__)

NOT_YOURS = "Only the bot's owner can answer this question."
OUTCOMES: dict[Verdict, str] = {
    "approved": "allowed once",
    "approved-session": "allowed for this session",
    "denied": "denied",
}


def question_text(request: ApprovalRequest) -> str:
    return f"🔐 **Allow this tool call?**\n`{request.tool}` `{request.preview}`"


class Question(discord.ui.View):
    def __init__(self, owners: frozenset[int], request: ApprovalRequest) -> None:
        super().__init__(timeout=None)
        self._owners = owners
        self._request = request
        self.answer: ApprovalAnswer | None = None
        self.decided = anyio.Event()

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id in self._owners:
            return True
        log.info("discord_approval_refused_stranger", user=interaction.user.id)
        await interaction.response.send_message(NOT_YOURS, ephemeral=True)
        return False

    @discord.ui.button(label="Allow once", style=discord.ButtonStyle.success)
    async def once(self, interaction: discord.Interaction, _: discord.ui.Button[Question]) -> None:
        await self._decide(interaction, "approved")

    @discord.ui.button(label="Allow for session", style=discord.ButtonStyle.primary)
    async def session(
        self, interaction: discord.Interaction, _: discord.ui.Button[Question]
    ) -> None:
        await self._decide(interaction, "approved-session")

    @discord.ui.button(label="Deny", style=discord.ButtonStyle.danger)
    async def deny(self, interaction: discord.Interaction, _: discord.ui.Button[Question]) -> None:
        await self._decide(interaction, "denied")

    async def _decide(self, interaction: discord.Interaction, verdict: Verdict) -> None:
        if self.answer is not None:
            return
        who = interaction.user
        self.answer = ApprovalAnswer(verdict, str(who.id))
        self.stop()
        self.decided.set()
        text = f"{question_text(self._request)}\n→ {OUTCOMES[verdict]} by {who.display_name}"
        try:
            await interaction.response.edit_message(content=text, view=None)
        except discord.HTTPException as exc:
            log.warning("discord_approval_edit_failed", status=exc.status, code=exc.code)


class DiscordApprovals:
    def __init__(self, adapter: DiscordAdapter, owners: frozenset[int]) -> None:
        self._adapter = adapter
        self._owners = owners
        self._open: set[Question] = set()

    async def ask(self, conversation: ConversationId, request: ApprovalRequest) -> ApprovalAnswer:
        view = Question(self._owners, request)
        question: QuestionView[discord.ui.View] = QuestionView(question_text(request), view)
        self._open.add(view)
        try:
            if not await self._adapter.ask(conversation, question):
                return ApprovalAnswer("denied", "not delivered")
            await view.decided.wait()
        except anyio.get_cancelled_exc_class():
            view.stop()
            question.withdrawn = True  # not sent if it is not out yet
            text = f"{question_text(request)}\n→ withdrawn"
            self._adapter.close_question(conversation, question, text)
            raise
        finally:
            self._open.discard(view)
        assert view.answer is not None
        return view.answer

    def withdraw_all(self) -> None:
        """At shutdown: every open question is denied (no press can be heard any more)."""
        for view in list(self._open):
            if view.answer is None:
                view.answer = ApprovalAnswer("denied", SHUTDOWN)
                view.stop()
                view.decided.set()
