"""The recovery key's text form and secret storage's encryption, without a homeserver."""

from __future__ import annotations

import pytest

from thalos_bot_matrix import recovery


def test_a_recovery_key_reads_back_and_a_typo_is_refused() -> None:
    key = recovery.new_key()
    text = recovery.encode_recovery_key(key)
    assert len(text.split()) == 12, text  # Element's 48 characters in groups of four
    assert recovery.decode_recovery_key(text) == key
    assert recovery.decode_recovery_key(text.replace(" ", "")) == key
    first = text[0]
    typo = ("2" if first != "2" else "3") + text[1:]
    with pytest.raises(recovery.RecoveryKeyError):
        recovery.decode_recovery_key(typo)
    with pytest.raises(recovery.RecoveryKeyError, match="base58"):
        recovery.decode_recovery_key("0OIl")


def test_a_secret_opens_only_with_its_key_and_its_name() -> None:
    key = recovery.new_key()
    sealed = recovery.encrypt(key, "m.cross_signing.master", "seed")
    assert recovery.decrypt(key, "m.cross_signing.master", sealed) == "seed"
    with pytest.raises(recovery.RecoveryKeyError):
        recovery.decrypt(recovery.new_key(), "m.cross_signing.master", sealed)
    with pytest.raises(recovery.RecoveryKeyError):
        recovery.decrypt(key, "m.cross_signing.self_signing", sealed)
    assert recovery.unb64(sealed["iv"])[8] & 0x80 == 0, "the spec's IV bit is cleared"


def test_the_key_check_tells_the_right_key_from_another() -> None:
    key = recovery.new_key()
    description = recovery.key_description(key)
    recovery.check_key(key, description)
    with pytest.raises(recovery.RecoveryKeyError, match="not the account's recovery key"):
        recovery.check_key(recovery.new_key(), description)
    with pytest.raises(recovery.RecoveryKeyError, match="another algorithm"):
        recovery.check_key(key, {**description, "algorithm": "m.other"})
