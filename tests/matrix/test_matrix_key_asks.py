"""Asking for room keys the bot lacks, on the real Synapse: a message whose key was
withheld is remembered, the bot asks its sender's devices for the session, and when the
key comes (forwarded in answer, or a late ``m.room_key``) the message is decrypted and
answered, once. A forwarded key from anyone but the session's maker is not taken."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.e2ee_human import MEGOLM, EncryptingHuman
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix.cross_signing import RECOVERY_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _named(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == name]


async def test_a_withheld_key_is_asked_for_and_the_message_answered_once_it_comes(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    async with (
        EncryptingHuman(synapse, alice) as human,
        EncryptingHuman(synapse, mallory) as stranger,
    ):
        await human.upload_keys()
        await stranger.upload_keys()
        with capture_logs() as logs:
            async with running_bot(
                synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
            ):
                room = await human.direct_chat(bot.user_id, encrypted=True)
                await human.until(lambda h: h.joined(room, bot.user_id))
                await human.say_encrypted(room, bot.user_id, "withheld", withhold=True)
                session = human.group_out[room]
                request = await human.until(
                    lambda _h: human.key_requests[0] if human.key_requests else None
                )
                assert request["sender"] == bot.user_id
                assert request["content"]["action"] == "request"
                assert request["content"]["requesting_device_id"] == bot.device_id
                assert request["content"]["body"] == {
                    "algorithm": MEGOLM,
                    "room_id": room,
                    "sender_key": human.olm.identity_keys["curve25519"],
                    "session_id": session.id,
                }
                # A second message under the same session: no second request.
                await human.say_encrypted(room, bot.user_id, "withheld too")
                # Someone else forwarding the session (not its maker): not taken.
                exported = session.session_key
                await stranger.send_olm(
                    bot.user_id,
                    "m.forwarded_room_key",
                    {
                        "algorithm": MEGOLM,
                        "room_id": room,
                        "session_id": session.id,
                        "session_key": _exported(exported),
                        "sender_key": human.olm.identity_keys["curve25519"],
                        "sender_claimed_ed25519_key": human.olm.identity_keys["ed25519"],
                        "forwarding_curve25519_key_chain": [],
                    },
                )
                await human.sync_once()
                assert not human.bodies(room, bot.user_id)
                await human.forward_key(room, bot.user_id)
                # Both are handled, in order: the second while the first's turn runs.
                await human.until(lambda h: len(h.bodies(room, bot.user_id)) >= 2 or None)
                await human.until(lambda h: "You said: withheld" in h.bodies(room, bot.user_id))
                # A new session, withheld, then sent late as a plain m.room_key.
                human.rotate(room)
                await human.say_encrypted(room, bot.user_id, "late key", withhold=True)
                await human.until(lambda _h: len(human.key_requests) >= 2 or None)
                await human.send_room_key(room, bot.user_id)
                await human.until(lambda h: "You said: late key" in h.bodies(room, bot.user_id))
                await human.say_encrypted(room, bot.user_id, "after")
                await human.until(lambda h: "You said: after" in h.bodies(room, bot.user_id))
    said = human.bodies(room, bot.user_id)
    for text in ("withheld", "late key", "after"):
        assert said.count(f"You said: {text}") == 1, said
    assert len([b for b in said if b.startswith("Still working")]) == 1, said  # withheld too
    assert len(said) == 4, said
    assert len(human.key_requests) == 2, human.key_requests
    assert len(_named(logs, "matrix_room_key_requested")) == 2
    refused = _named(logs, "matrix_forwarded_key_refused")
    assert [e["reason"] for e in refused] == ["not its maker"]
    assert len(_named(logs, "matrix_event_decryptable_now")) == 3


def _exported(session_key: str) -> str:
    """An outbound session's key in the export form a forwarded key carries."""
    from olm.group_session import InboundGroupSession

    inbound = InboundGroupSession(session_key)
    return str(inbound.export_session(inbound.first_known_index))
