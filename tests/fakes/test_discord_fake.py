"""The Discord fake refuses what Discord refuses, with Discord's words and codes, and
numbers, limits and replays as Discord does (checked with a plain HTTP and WebSocket
client, not discord.py)."""

from __future__ import annotations

import json
import zlib
from typing import Any

import aiohttp
import pytest

from tests.fakes.discord_api import DiscordFake

pytestmark = pytest.mark.anyio
AGENT = {"User-Agent": "DiscordBot (https://example.org, 1.0)"}


def auth(fake: DiscordFake) -> dict[str, str]:
    return {**AGENT, "Authorization": f"Bot {fake.token}"}


async def post(
    fake: DiscordFake, path: str, body: Any, *, headers: dict[str, str] | None = None
) -> tuple[int, Any, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(fake.base_url + path, json=body, headers=headers or auth(fake)) as r,
    ):
        return r.status, await r.json(content_type=None), r.headers


async def test_rest_refusals_carry_discords_codes_and_words() -> None:
    with DiscordFake() as fake:
        user = fake.add_user("ann")
        dm = fake.dm_channel_id(user)
        status, body, _ = await post(
            fake,
            f"/channels/{dm}/messages",
            {"content": "x"},
            headers={**AGENT, "Authorization": "Bot nope"},
        )
        assert (status, body) == (401, {"message": "401: Unauthorized", "code": 0})
        status, body, _ = await post(fake, f"/channels/{dm}/messages", {"content": "x" * 2001})
        assert status == 400
        assert body["code"] == 50035
        assert body["errors"]["content"]["_errors"][0]["code"] == "BASE_TYPE_MAX_LENGTH"
        status, body, _ = await post(fake, f"/channels/{dm}/messages", {"content": ""})
        assert (status, body) == (400, {"message": "Cannot send an empty message", "code": 50006})
        status, body, _ = await post(fake, "/channels/1234567890123/messages", {"content": "x"})
        assert (status, body["code"]) == (404, 10003)
        row = {
            "type": 1,
            "components": [
                {"type": 2, "style": 1, "label": "a", "custom_id": "x"},
                {"type": 2, "style": 1, "label": "b", "custom_id": "x"},
            ],
        }
        status, body, _ = await post(
            fake, f"/channels/{dm}/messages", {"content": "q", "components": [row]}
        )
        assert (
            body["errors"]["components"]["0"]["components"]["1"]["custom_id"]["_errors"][0]["code"]
            == "COMPONENT_CUSTOM_ID_DUPLICATED"
        )


async def test_enforce_nonce_returns_the_earlier_message() -> None:
    with DiscordFake() as fake:
        dm = fake.dm_channel_id(fake.add_user("ann"))
        first = await post(
            fake,
            f"/channels/{dm}/messages",
            {"content": "hi", "nonce": "n1", "enforce_nonce": True},
        )
        again = await post(
            fake,
            f"/channels/{dm}/messages",
            {"content": "hi", "nonce": "n1", "enforce_nonce": True},
        )
        plain = await post(fake, f"/channels/{dm}/messages", {"content": "hi", "nonce": "n1"})
    assert first[1]["id"] == again[1]["id"]
    assert plain[1]["id"] != first[1]["id"], "without enforce_nonce a nonce is only echoed"
    assert fake.texts(dm) == ["hi", "hi"]


async def test_buckets_count_per_channel_and_a_429_says_how_long() -> None:
    with DiscordFake(edits_per_window=2, window=30) as fake:
        dm = fake.dm_channel_id(fake.add_user("ann"))
        other = fake.dm_channel_id(fake.add_user("bob"))
        one = await post(fake, f"/channels/{dm}/messages", {"content": "1"})
        two = await post(fake, f"/channels/{dm}/messages", {"content": "2"})
        three = await post(fake, f"/channels/{dm}/messages", {"content": "3"})
        elsewhere = await post(fake, f"/channels/{other}/messages", {"content": "x"})
    assert (one[2]["X-RateLimit-Limit"], one[2]["X-RateLimit-Remaining"]) == ("2", "1")
    assert two[2]["X-RateLimit-Remaining"] == "0"
    assert one[2]["X-RateLimit-Bucket"] == three[2]["X-RateLimit-Bucket"]
    assert three[0] == 429
    assert three[1]["message"] == "You are being rate limited."
    assert three[1]["global"] is False
    assert 0 < three[1]["retry_after"] <= 30
    assert three[2]["Retry-After"].isdigit()
    assert three[2]["Via"], "through Discord's front, unlike a Cloudflare ban"
    assert elsewhere[0] == 200, "another channel has its own bucket"
    (violation,) = fake.limits.violations
    assert violation.startswith(f"POST /channels/{{channel_id}}/messages {dm} "), (
        "sent after Remaining: 0, before the reset: counted against the client"
    )


async def test_past_fifty_requests_a_second_every_route_closes_for_the_bot() -> None:
    with DiscordFake() as fake:
        fake.limits.clock = lambda: 1000.0  # one instant: the window cannot roll on
        channels = [fake.dm_channel_id(fake.add_user(f"u{i}")) for i in range(51)]
        answers = [await post(fake, f"/channels/{c}/messages", {"content": "x"}) for c in channels]
        late = await post(fake, f"/channels/{channels[0]}/messages", {"content": "y"})
    assert [a[0] for a in answers[:50]] == [200] * 50, "one message per channel: no bucket"
    status, body, headers = answers[50]
    assert status == 429
    assert body["global"] is True
    assert headers["X-RateLimit-Global"] == "true"
    assert headers["X-RateLimit-Scope"] == "global"
    assert "X-RateLimit-Bucket" not in headers
    assert headers["Retry-After"] == "1"
    assert late[0] == 429
    (violation,) = fake.limits.violations
    assert violation.endswith("(global)"), "sent during a global block it was told of"


async def _frames(
    ws: aiohttp.ClientWebSocketResponse, inflate: Any, count: int
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < count:
        msg = await ws.receive(timeout=5)
        assert msg.type is aiohttp.WSMsgType.BINARY, msg
        out.append(json.loads(inflate.decompress(msg.data)))
    return out


async def test_the_gateway_identifies_numbers_and_replays_on_resume() -> None:
    with DiscordFake() as fake:
        user = fake.add_user("ann")
        url = fake.gateway_url + "?v=10&encoding=json&compress=zlib-stream"
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(url) as ws:
                inflate = zlib.decompressobj()
                (hello,) = await _frames(ws, inflate, 1)
                assert hello["op"] == 10
                assert hello["d"]["heartbeat_interval"] > 0
                await ws.send_str(
                    json.dumps(
                        {
                            "op": 2,
                            "d": {
                                "token": fake.token,
                                "intents": (1 << 12) | (1 << 15),
                                "properties": {"os": "x", "browser": "x", "device": "x"},
                            },
                        }
                    )
                )
                (ready,) = await _frames(ws, inflate, 1)
                assert (ready["t"], ready["s"]) == ("READY", 1)
                session_id = ready["d"]["session_id"]
                await ws.send_str(json.dumps({"op": 1, "d": 1}))
                (ack,) = await _frames(ws, inflate, 1)
                assert ack["op"] == 11
            fake.say_dm(user, "missed one")
            fake.say_dm(user, "missed two")
            async with session.ws_connect(url) as ws:
                inflate = zlib.decompressobj()
                await _frames(ws, inflate, 1)
                await ws.send_str(
                    json.dumps(
                        {"op": 6, "d": {"token": fake.token, "session_id": session_id, "seq": 1}}
                    )
                )
                replayed = await _frames(ws, inflate, 3)
            assert [(f["t"], f["s"]) for f in replayed] == [
                ("MESSAGE_CREATE", 2),
                ("MESSAGE_CREATE", 3),
                ("RESUMED", 4),
            ]
            assert [f["d"].get("content") for f in replayed[:2]] == ["missed one", "missed two"]
            async with session.ws_connect(url) as ws:
                inflate = zlib.decompressobj()
                await _frames(ws, inflate, 1)
                await ws.send_str(
                    json.dumps(
                        {"op": 6, "d": {"token": fake.token, "session_id": "unknown", "seq": 1}}
                    )
                )
                (invalid,) = await _frames(ws, inflate, 1)
            assert (invalid["op"], invalid["d"]) == (9, False)


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"op": 1, "d": None}, None),
        ({"op": 3, "d": {}}, 4003),
        ({"op": 99, "d": {}}, 4001),
        ({"op": 2, "d": {"token": "wrong", "intents": 0, "properties": {}}}, 4004),
        ({"op": 2, "d": {"token": "TOKEN", "intents": 1 << 30, "properties": {}}}, 4013),
        ({"op": 2, "d": {"token": "TOKEN", "intents": 1 << 1, "properties": {}}}, 4014),
    ],
)
async def test_the_gateway_closes_with_discords_codes(
    payload: dict[str, Any], code: int | None
) -> None:
    with DiscordFake() as fake:
        if payload["d"] and payload["d"].get("token") == "TOKEN":
            payload["d"]["token"] = fake.token
        url = fake.gateway_url + "?v=10&encoding=json"
        async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
            await ws.receive(timeout=5)
            await ws.send_str(json.dumps(payload))
            msg = await ws.receive(timeout=5)
            if code is None:
                assert json.loads(msg.data)["op"] == 11
            else:
                assert msg.type is aiohttp.WSMsgType.CLOSE
                assert msg.data == code


async def _voice(fake: DiscordFake, channel: int, payload: dict[str, Any]) -> tuple[int, Any]:
    form = aiohttp.FormData()
    form.add_field("payload_json", json.dumps(payload), content_type="application/json")
    form.add_field("files[0]", b"OggS" + bytes(40), filename="answer.ogg")
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{fake.base_url}/channels/{channel}/messages", data=form, headers=auth(fake)
        ) as r,
    ):
        return r.status, await r.json(content_type=None)


async def test_a_voice_message_needs_its_length_and_waveform_and_no_text() -> None:
    with DiscordFake() as fake:
        dm = fake.dm_channel_id(fake.add_user("ann"))
        whole = {"id": 0, "filename": "answer.ogg", "duration_secs": 1.5, "waveform": "gICA"}
        voice = {"flags": 1 << 13, "attachments": [whole]}
        status, body = await _voice(fake, dm, {**voice, "content": "hi"})
        assert body["errors"]["content"]["_errors"][0]["code"] == "VOICE_MESSAGE_CONTENT"
        short = {"id": 0, "filename": "answer.ogg", "waveform": "gICA"}
        status, body = await _voice(fake, dm, {**voice, "attachments": [short]})
        assert status == 400
        assert "duration_secs" in json.dumps(body["errors"])
        status, body = await _voice(fake, dm, voice)
        assert status == 200
        assert body["flags"] & (1 << 13)
        assert body["attachments"][0]["duration_secs"] == 1.5
