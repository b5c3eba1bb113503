"""The fake signal-cli daemon against signal-cli's own documented examples
(signal-cli-jsonrpc(5)) and error wording, spoken over a raw socket as any client
would. No JSON-RPC client of signal-cli is on PyPI: ``pysignalclirestapi`` and
``signalbot`` speak the signal-cli-rest-api HTTP wrapper, not signal-cli's JSON-RPC."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from tests.fakes.signal_cli import SignalCliFake


def _exchange(fake: SignalCliFake, *lines: bytes) -> list[dict[str, Any]]:
    with socket.create_connection(("127.0.0.1", fake.port), timeout=10) as sock:
        for line in lines:
            sock.sendall(line + b"\n")
        reader = sock.makefile("rb")
        return [json.loads(reader.readline()) for _ in lines]


def test_a_request_without_a_method_is_answered_as_the_man_page_shows(
    fake: SignalCliFake,
) -> None:
    [answer] = _exchange(fake, b'{"jsonrpc":"2.0"}')
    assert answer == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "method field must be set", "data": None},
        "id": None,
    }


def test_send_answers_with_the_message_timestamp(fake: SignalCliFake) -> None:
    account, to = fake.world.bot.number, fake.world.user.number
    request = {
        "jsonrpc": "2.0",
        "method": "send",
        "params": {"recipient": [to], "message": "MESSAGE", "account": account},
        "id": 4,
    }
    [answer] = _exchange(fake, json.dumps(request).encode())
    assert answer["id"] == 4
    assert isinstance(answer["result"]["timestamp"], int)
    [message] = fake.mine(fake.chat(fake.world.user))
    assert (message.timestamp, message.text) == (answer["result"]["timestamp"], "MESSAGE")


@pytest.mark.parametrize(
    ("line", "code", "message"),
    [
        (b"{not json", -32700, None),
        (b'{"jsonrpc":"2.0","method":"nosuch","id":1}', -32601, "Method not implemented"),
        (
            b'{"jsonrpc":"2.0","method":"send","params":{"account":"+4900000000"},"id":1}',
            -32602,
            "Specified account does not exist",
        ),
    ],
)
def test_errors_carry_signal_clis_codes(
    fake: SignalCliFake, line: bytes, code: int, message: str | None
) -> None:
    [answer] = _exchange(fake, line)
    assert answer["error"]["code"] == code
    if message is not None:
        assert answer["error"]["message"] == message


def test_a_send_without_recipients_is_a_user_error(fake: SignalCliFake) -> None:
    request = {"jsonrpc": "2.0", "method": "send", "params": {"account": fake.world.bot.number}}
    [answer] = _exchange(fake, json.dumps({**request, "id": 2}).encode())
    assert answer["error"] == {"code": -1, "message": "No recipients given", "data": None}


def test_subscribed_events_come_in_the_documented_shape(fake: SignalCliFake) -> None:
    account = fake.world.bot.number
    with socket.create_connection(("127.0.0.1", fake.port), timeout=10) as sock:
        reader = sock.makefile("rb")
        subscribe = {"jsonrpc": "2.0", "id": "id", "method": "subscribeReceive"}
        sock.sendall(json.dumps({**subscribe, "params": {"account": account}}).encode() + b"\n")
        assert json.loads(reader.readline()) == {"jsonrpc": "2.0", "result": 0, "id": "id"}
        fake.say("foobar", fake.world.user)
        note = json.loads(reader.readline())
    assert note["method"] == "receive"
    assert note["params"]["subscription"] == 0
    result = note["params"]["result"]
    assert result["account"] == account
    envelope = result["envelope"]
    documented = {"source", "sourceNumber", "sourceUuid", "sourceName", "sourceDevice"}
    assert documented | {"timestamp", "dataMessage"} <= set(envelope)
    data = envelope["dataMessage"]
    assert data["message"] == "foobar"
    assert {"timestamp", "expiresInSeconds", "viewOnce"} <= set(data)


def test_envelopes_wait_while_nobody_is_subscribed(fake: SignalCliFake) -> None:
    fake.say("while you were away", fake.world.user)
    account = fake.world.bot.number
    with socket.create_connection(("127.0.0.1", fake.port), timeout=10) as sock:
        reader = sock.makefile("rb")
        subscribe = {"jsonrpc": "2.0", "id": 1, "method": "subscribeReceive"}
        sock.sendall(json.dumps({**subscribe, "params": {"account": account}}).encode() + b"\n")
        json.loads(reader.readline())
        note = json.loads(reader.readline())
    assert note["params"]["result"]["envelope"]["dataMessage"]["message"] == "while you were away"
