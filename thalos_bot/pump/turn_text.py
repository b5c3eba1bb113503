"""The text a turn sends the model for one inbound message.

The user's words, with a leading ``//`` unescaped (``//new`` is sent as ``/new``), and,
when the message replies to another, the replied text ahead of them as a ``quote``
block. The quoted text is someone's message (the bot's own answer, the user's, or in a
group another member's), so it goes through the shared block rule
(:mod:`thalos_bot.domain.prompt_blocks`): it cannot close the quote early or forge any
other block of ours.
"""

from __future__ import annotations

from thalos_bot.channels.ports import InboundMessage, Quoted
from thalos_bot.domain.prompt_blocks import BlockTag, render_block
from thalos_bot.domain.slash import unescaped


def model_text(message: InboundMessage) -> str:
    words = unescaped(message.text)
    if message.reply_to is None:
        return words
    return f"{quote_block(message.reply_to)}\n\n{words}"


def quote_block(quoted: Quoted) -> str:
    attributes: dict[str, str] = {"from": quoted.author}
    if quoted.partial:
        attributes["part"] = "yes"
    if quoted.cut:
        attributes["cut"] = "yes"
    text = f"{quoted.text}\n[…]" if quoted.cut else quoted.text
    return render_block(BlockTag.QUOTE, [text], attributes)
