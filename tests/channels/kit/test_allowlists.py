"""Every transport's allowlist is the kit's, fed by the plug-in's reading of its own
conversation ids: where a scheduled answer may still go, and why not, in one wording."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.manifest import manifest as discord
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.manifest import manifest as matrix
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.manifest import manifest as slack
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.manifest import manifest as telegram

ROOM = "!listed:example.org"
ANN, BOB = 123456789012345678, 223456789012345678
CHAN, OTHER = 323456789012345678, 423456789012345678
CASES: list[tuple[object, BaseModel, str, str | None]] = [
    (telegram, TelegramConfig(allowed_user_ids=[42], groups=[-100]), "42", None),
    (telegram, TelegramConfig(allowed_user_ids=[42], groups=[-100]), "-100:7", None),
    (
        telegram,
        TelegramConfig(allowed_user_ids=[42]),
        "7",
        "user 7 is not in allowed_user_ids",
    ),
    (telegram, TelegramConfig(allowed_user_ids=[42]), "-5", "group -5 is not in groups"),
    (
        telegram,
        TelegramConfig(allowed_user_ids=[42]),
        "chat",
        "'chat' is not a Telegram chat id conversation id",
    ),
    (discord, DiscordConfig(allowed_users=[ANN], guild_channels=[CHAN]), f"dm:{ANN}", None),
    (discord, DiscordConfig(allowed_users=[ANN], guild_channels=[CHAN]), f"th:{CHAN}:55", None),
    (
        discord,
        DiscordConfig(allowed_users=[ANN]),
        f"dm:{BOB}",
        f"user {BOB} is not in allowed_users",
    ),
    (
        discord,
        DiscordConfig(allowed_users=[ANN], guild_channels=[CHAN]),
        f"ch:{OTHER}",
        f"channel {OTHER} is not in guild_channels",
    ),
    (
        slack,
        SlackConfig(allowed_users=["U0123ABCD"], channels=["C0123ABCD"]),
        "C0123ABCD/1700000000.1",
        None,
    ),
    (slack, SlackConfig(allowed_users=["U0123ABCD"]), "D0123ABCD", None),
    (
        slack,
        SlackConfig(allowed_users=["U0123ABCD"]),
        "C0999ZZZZ/1.1",
        "channel C0999ZZZZ is not in channels",
    ),
    (
        matrix,
        MatrixConfig(allowed_users=["@ann:example.org"], rooms=[ROOM]),
        ROOM,
        None,
    ),
    (matrix, MatrixConfig(allowed_users=["@ann:example.org"]), "!direct:example.org", None),
    (matrix, MatrixConfig(allowed_users=["@ann:example.org"]), "nope", None),
]


@pytest.mark.parametrize(("plugin", "config", "conversation", "refusal"), CASES)
def test_a_scheduled_answer_goes_where_the_config_still_allows(
    plugin: object, config: BaseModel, conversation: str, refusal: str | None
) -> None:
    name = getattr(plugin, "name")  # noqa: B009 - the plug-ins share no base class
    allowlist = plugin.allowlist(config)  # type: ignore[attr-defined]
    address = Address(ChannelId(name), ConversationId(conversation))
    if conversation == "nope":
        assert allowlist.refusal(address) == "'nope' is not a Matrix room conversation id"
    else:
        assert allowlist.refusal(address) == refusal
