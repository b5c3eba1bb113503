"""Signal's settings, conversation ids, event decoding, the probe's ledger, ``doctor``
and ``thalos-bot signal pair``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from tests.fakes.signal_cli import SignalCliFake
from tests.signal.conftest import make_config
from tests.waits import until
from thalos_bot.channels.admission.pair_command import PAIRED
from thalos_bot.channels.kept import KeptState
from thalos_bot.service.standby import holds_connection
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.config import SignalConfig
from thalos_bot_signal.doctor import signal_checks
from thalos_bot_signal.inbound import Admitted, Reaction, Receipt, Rules
from thalos_bot_signal.ledger import Ledger, NotOwnerError
from thalos_bot_signal.manifest import manifest
from thalos_bot_signal.pair import pair

UUID = "5b1c7a36-2d0f-4e38-9a3e-8f9f1b2c3d4e"
BOT_UUID = "0e9b1f00-7c3a-4a5b-8e2f-1d2c3b4a5f60"
GROUP = "A" * 43 + "="


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"enabled": True}, "list who may talk to the bot"),
        ({"allowed_users": ["Ana"]}, "neither a phone number"),
        ({"allowed_users": ["4915112345678"]}, "neither a phone number"),
        ({"groups": ["family"]}, "not a Signal group id"),
        ({"daemon_url": "http://127.0.0.1:8080"}, "daemon_url"),
    ],
)
def test_bad_settings_are_named(values: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        SignalConfig.model_validate(values)


def test_a_uuid_is_kept_canonical_and_first_is_the_owner() -> None:
    config = SignalConfig.model_validate({"allowed_users": [UUID.upper(), "+4915112345678"]})
    assert config.allowed_ids() == [UUID, "+4915112345678"]


def test_conversation_ids() -> None:
    assert Place.parse("dm:+4915112345678").target() == {"recipient": ["+4915112345678"]}
    assert Place.parse(f"group:{GROUP}").target() == {"groupId": GROUP}
    for bad in ("dm:Ana", "group:family", "chat:+4915112345678"):
        with pytest.raises(ValueError, match="Signal conversation id"):
            Place.parse(bad)


def _rules() -> Rules:
    return Rules("+4915100000001", BOT_UUID, frozenset({UUID}), frozenset({GROUP}), 100)


def _event(data: dict[str, Any] | None = None, **envelope: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"sourceNumber": "+4915112345678", "sourceUuid": UUID}
    body["sourceName"] = "Ana"
    body |= {"timestamp": 1700000000000} | envelope
    if data is not None:
        body["dataMessage"] = {"timestamp": 1700000000000} | data
    return {"envelope": body, "account": "+4915100000001"}


def test_a_group_message_counts_only_with_the_bots_mention_taken_out() -> None:
    group = {"groupInfo": {"groupId": GROUP, "type": "DELIVER"}}
    plain = _rules().read(_event({"message": "hi all"} | group))
    assert plain is None
    mention = {"uuid": BOT_UUID, "start": 3, "length": 1}
    read = _rules().read(_event({"message": "👋 \ufffc what now?", "mentions": [mention]} | group))
    assert isinstance(read, Admitted)
    assert read.text == "👋 what now?"
    assert read.place == Place("group", GROUP)
    assert read.ref == f"1700000000000:{UUID}"


def test_strangers_unlisted_groups_and_our_own_transcripts_are_not_turns() -> None:
    stranger = _event({"message": "hi"}, sourceNumber="+4915199999999", sourceUuid=BOT_UUID[::-1])
    assert _rules().read(stranger) is None
    other = {"groupInfo": {"groupId": "B" * 43 + "=", "type": "DELIVER"}}
    assert _rules().read(_event({"message": "hi"} | other)) is None
    sent = {"sentMessage": {"destinationUuid": UUID, "timestamp": 17, "message": "typed"}}
    own = _rules().read(_event(sourceNumber="+4915100000001", syncMessage=sent))
    assert own == Receipt({UUID}, [17])


def test_a_reaction_and_a_receipt() -> None:
    reaction = {"emoji": "✅", "targetSentTimestamp": 42, "isRemove": False}
    read = _rules().read(_event({"message": None, "reaction": reaction}))
    assert read == Reaction(Place("dm", UUID), UUID, "Ana", "✅", "42")
    receipt = _rules().read(_event(receiptMessage={"isDelivery": True, "timestamps": [42]}))
    assert receipt == Receipt({UUID, "+4915112345678"}, [42])


@pytest.mark.anyio
async def test_the_ledger_finds_only_a_timestamp_heard_after_the_send_began(
    tmp_path: Path,
) -> None:
    ledger = Ledger(KeptState(tmp_path / "sends.json"), window_ms=60_000)
    await ledger.attempt("k1", UUID)
    await ledger.heard({UUID}, [1])  # long before: another message
    assert ledger.arrived(UUID, "k1") is None
    begun = ledger._attempts["k1"][1]
    await ledger.heard({"someone else"}, [begun + 5])
    assert ledger.arrived(UUID, "k1") is None
    ledger.answered(begun + 10)
    await ledger.heard({UUID}, [begun + 10])  # the answer of a send that did answer
    assert ledger.arrived(UUID, "k1") is None
    await ledger.heard({UUID}, [begun + 20])
    assert ledger.arrived(UUID, "k1") == begun + 20
    again = Ledger(KeptState(tmp_path / "sends.json"), window_ms=60_000)  # after a restart
    await again.open()
    assert again.arrived(UUID, "k1") == begun + 20


class Fenced:
    """The shared store of a replica that lost the connection's lease."""

    async def load_state(self) -> dict[str, object] | None:
        return None

    async def save_state(self, state: object) -> bool:
        return False


class Unreachable:
    """The shared store while the database is down."""

    async def load_state(self) -> dict[str, object] | None:
        raise OSError("connection refused")

    async def save_state(self, state: object) -> bool:
        raise OSError("connection refused")


@pytest.mark.anyio
async def test_a_store_that_cannot_be_reached_leaves_the_ledger_in_memory(
    tmp_path: Path,
) -> None:
    ledger = Ledger(KeptState(tmp_path / "sends.json", Unreachable()), window_ms=60_000)
    await ledger.attempt("k1", UUID)  # the send goes ahead
    begun = ledger._attempts["k1"][1]
    await ledger.heard({UUID}, [begun + 5])
    assert ledger.arrived(UUID, "k1") == begun + 5


@pytest.mark.anyio
async def test_a_replica_that_lost_the_connection_begins_no_send(tmp_path: Path) -> None:
    ledger = Ledger(KeptState(tmp_path / "sends.json", Fenced()), window_ms=60_000)
    with pytest.raises(NotOwnerError):
        await ledger.attempt("k1", UUID)
    assert not (tmp_path / "sends.json").exists()


@pytest.mark.anyio
async def test_doctor_sees_the_daemon_and_the_account(
    fake: SignalCliFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_config(fake)
    checks = await signal_checks(config, offline=False)
    assert [(c.name, c.outcome) for c in checks] == [
        ("signal-cli daemon", "ok"),
        ("Signal account", "ok"),
    ]
    monkeypatch.setenv(ACCOUNT_ENV, "+4915177777777")
    [_, account] = await signal_checks(config, offline=False)
    assert account.outcome == "fail"
    assert "+4915177777777" not in account.detail
    fake.stop()
    [daemon] = await signal_checks(config, offline=False)
    assert (daemon.outcome, daemon.detail) == ("fail", f"nothing listens at {fake.url}")


@asynccontextmanager
async def pairing(fake: SignalCliFake, path: Path) -> AsyncIterator[tuple[str, list[int]]]:
    """``signal pair`` over ``path``, running once it shows its code and listens: (the
    code, its exit code once it ended); on leaving, waits for it to end."""
    lines: list[str] = []
    result: list[int] = []

    async def run() -> None:
        result.append(await pair(path, yes=True, ask=None, show=lines.append))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await fake.wait_for(lambda: fake.streams and len(lines) >= 2)
        code = re.search(r"[A-Z2-9]{4}-[A-Z2-9]{4}", "\n".join(lines))
        assert code is not None
        yield code.group(0), result
        await until(lambda: bool(result))  # (the fake's wait_for sees only its changes)
    assert result == [0], lines


@pytest.mark.anyio
async def test_pairing_adds_whoever_sends_the_code(fake: SignalCliFake, tmp_path: Path) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(
        "# my bot\n[channels.signal]\nenabled = false  # on after pairing\n"
        f'allowed_users = []\ndaemon_url = "{fake.url}"\n',
        encoding="utf-8",
    )
    async with pairing(fake, path) as (code, _):
        fake.say("ABCD-EFGH", fake.world.stranger)
        fake.say(code.lower(), fake.world.user)
    text = path.read_text(encoding="utf-8")
    assert f'allowed_users = ["{fake.world.user.number}"]' in text
    assert "enabled = true" in text
    assert [m.text for m in fake.mine(fake.chat(fake.world.user))] == [PAIRED]
    assert fake.mine(fake.chat(fake.world.stranger)) == []


@pytest.mark.anyio
async def test_pairing_waits_out_a_daemon_restart(fake: SignalCliFake, tmp_path: Path) -> None:
    """signal-cli restarts while pairing waits for the code (an upgrade, a crash under
    systemd): the event stream is opened again after the backoff, and the code sent
    then still pairs. Before, the command ended with "the event stream failed"."""
    path = tmp_path / "bot.toml"
    path.write_text(
        f'[channels.signal]\nallowed_users = []\ndaemon_url = "{fake.url}"\n'
        'backoff_initial = "0.1s"\nbackoff_max = "0.5s"\n',
        encoding="utf-8",
    )
    async with pairing(fake, path) as (code, result):
        fake.restart()  # the stream cut: nobody subscribed until the bot is again
        assert not fake.streams
        await until(lambda: bool(result or fake.streams))
        fake.say(code, fake.world.user)
    assert f'allowed_users = ["{fake.world.user.number}"]' in path.read_text(encoding="utf-8")


def test_signal_holds_one_connection_among_replicas(fake: SignalCliFake) -> None:
    """signal-cli writes every event to every subscribed connection: on replicas only
    the holder of the connection lease may subscribe."""
    assert holds_connection(manifest, make_config(fake))
