"""Whose session a message goes to, when several people talk in one conversation.

A conversation (a private chat, a group, a thread) is bound to the session of the
person who spoke there first. When someone else speaks in it (a group of several
people), their messages go to a session of their own, bound under the conversation's
id and their principal: their turns never read another person's history (its tool
results, the memories it recalled), and commands they send (``/new``, ``/status``,
``/end``) are about their session. One turn runs at a time in a conversation either
way: the chat shows one answer at a time.
"""

from __future__ import annotations

from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.ids import ConversationId
from thalos_bot.runtime.protocol import AgentRuntime
from thalos_bot.storage.conversations import Binding, ConversationMap

SEPARATOR = "~"


def personal(conversation: ConversationId, principal: str) -> ConversationId:
    """The binding key of ``principal``'s own session in ``conversation``."""
    return ConversationId(f"{conversation}{SEPARATOR}{principal}")


async def slot_of(
    conversations: ConversationMap, runtime: AgentRuntime, message: InboundMessage
) -> tuple[ConversationId, Binding | None]:
    """The binding key ``message``'s sender uses in its conversation, and its binding
    (None: none yet). The conversation's own key while it is unbound or bound to this
    sender's session; else their personal key."""
    conversation = message.conversation_id
    binding = await conversations.get(message.channel_id, conversation)
    if binding is None:
        return conversation, None
    info = await runtime.session_info(binding.session_id)
    caller = message.sender.context.id
    if info is None or info.owner == caller:
        return conversation, binding  # a missing session is reported dead as before
    mine = personal(conversation, caller)
    return mine, await conversations.get(message.channel_id, mine)
