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


def test_a_recovery_key_pasted_with_line_breaks_tabs_and_no_break_spaces_reads() -> None:
    key = recovery.new_key()
    groups = recovery.encode_recovery_key(key).split()
    pasted = " ".join(groups[:4]) + "\n" + "\t".join(groups[4:8]) + "\u00a0" + "".join(groups[8:])
    assert recovery.decode_recovery_key(f"  {pasted}\r\n") == key


def test_the_key_descriptions_iv_has_bit_63_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("thalos_bot_matrix.recovery.os.urandom", lambda size: b"\xff" * size)
    key = bytes(range(32))
    description = recovery.key_description(key)
    assert recovery.unb64(description["iv"])[8] == 0x7F, "as Element makes it"
    recovery.check_key(key, description)


@pytest.mark.parametrize(
    "check",
    [
        {"iv": "AAAAAAAAAAAAAAAAAAAAAA", "mac": "é" * 43},
        {"iv": "é" * 22, "mac": "AAAA"},
        {"iv": "!!!", "mac": "AAAA"},
        {"iv": "A" * 64, "mac": "AAAA"},
    ],
)
def test_a_malformed_key_description_is_a_clear_refusal(check: dict[str, str]) -> None:
    description = {"algorithm": recovery.ALGORITHM, **check}
    with pytest.raises(recovery.RecoveryKeyError, match="not the account's recovery key"):
        recovery.check_key(recovery.new_key(), description)


def test_a_secret_that_is_not_base64_is_refused_not_damaged() -> None:
    with pytest.raises(ValueError, match="not base64"):
        recovery.encrypt(recovery.new_key(), "m.cross_signing.master", "seed!")


# Made by the plug-in's own first secret storage code (before mautrix did it), with a
# test key (bytes 0..31) and fixed IVs: what accounts set up then must still open.
OLD_KEY = bytes(range(32))
OLD_RECOVERY_KEY = "EsSz ykH7 LCZx 7Cae cmKD wcmY JRXi Ybtu 8iQ3 t8Ez nRwK pUY1"
OLD_DESCRIPTION = {
    "algorithm": "m.secret_storage.v1.aes-hmac-sha2",
    "iv": "MjM0NTY3ODk6Ozw9Pj9AQQ==",
    "mac": "7QxSsyF/bt79H0p3APC/Ge8YUySfUyUWCyxK4ouAGuM=",
}
OLD_SEED = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM="  # bytes 100..131
OLD_SEALED = {
    "iv": "yMnKy8zNzs9Q0dLT1NXW1w==",
    "ciphertext": "rQ90qAL9MxWLsaZyXzRxiYK1ffQXTwtQeSB05urwumT8HBhDNTu++Wg9c5c=",
    "mac": "mNZq7Ylqf2IsMXPe5qtXal6B0P0+zGD2u/7ZNEfdME4=",
}


def test_a_secret_stored_in_the_first_format_still_opens() -> None:
    assert recovery.decode_recovery_key(OLD_RECOVERY_KEY) == OLD_KEY
    recovery.check_key(OLD_KEY, OLD_DESCRIPTION)
    seed = recovery.decrypt(OLD_KEY, "m.cross_signing.master", OLD_SEALED)
    assert seed == OLD_SEED
    assert recovery.unb64(seed) == bytes(range(100, 132))
    with pytest.raises(recovery.RecoveryKeyError):
        recovery.decrypt(OLD_KEY, "m.cross_signing.user_signing", OLD_SEALED)
