"""Encrypted attachments without a homeserver: what mautrix encrypts reads back, and
what the spec retired or a sender got wrong is refused before anything is decrypted."""

from __future__ import annotations

from typing import Any

import pytest

from thalos_bot_matrix.attachments import AttachmentError, decrypt, encrypt

PLAINTEXT = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def _sealed() -> tuple[bytes, dict[str, Any]]:
    ciphertext, file = encrypt(PLAINTEXT)
    assert ciphertext != PLAINTEXT
    assert "url" not in file, "the content URI is added once uploaded"
    return ciphertext, file


def test_an_encrypted_file_reads_back() -> None:
    ciphertext, file = _sealed()
    assert file["v"] == "v2"
    assert file["key"]["alg"] == "A256CTR"
    assert decrypt(ciphertext, file) == PLAINTEXT


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda f: {**f, "v": "v1"}, "only v2"),
        (lambda f: {**f, "key": {**f["key"], "alg": "A128CTR"}}, "not an A256CTR key"),
        (lambda f: {**f, "key": {**f["key"], "key_ops": ["encrypt"]}}, "may not decrypt"),
        (lambda f: {**f, "iv": None}, "missing"),
        (lambda f: {**f, "hashes": {"sha256": "AAAA" * 11}}, "SHA-256"),
        (lambda f: {**f, "iv": "AAAA"}, "IV"),
        (lambda f: {**f, "key": {**f["key"], "k": "A" * 22}}, "wrong length"),  # 16 bytes
        (lambda f: {**f, "key": {**f["key"], "k": "A" * 32}}, "wrong length"),  # 24 bytes
        (lambda f: {**f, "iv": f["iv"] + "!!"}, "not base64"),
        (lambda f: {**f, "key": {**f["key"], "k": f["key"]["k"] + "!!"}}, "not base64"),
    ],
)
def test_a_file_the_spec_does_not_allow_is_refused(change: Any, reason: str) -> None:
    ciphertext, file = _sealed()
    with pytest.raises(AttachmentError, match=reason):
        decrypt(ciphertext, change(file))


def test_a_hash_with_more_than_base64_is_refused() -> None:
    ciphertext, file = _sealed()
    hashes = {"sha256": file["hashes"]["sha256"] + "!!"}
    with pytest.raises(AttachmentError, match="not base64"):
        decrypt(ciphertext, {**file, "hashes": hashes})
