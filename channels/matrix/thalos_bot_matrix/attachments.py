"""Attachments in encrypted rooms: AES-256-CTR over the file, as the Matrix spec
("Sending encrypted attachments") has clients do it.

The file is encrypted with a fresh 256-bit key and a 128-bit counter block whose first
64 bits are random and whose last 64 (the counter) start at zero; the ciphertext is
uploaded as an opaque ``application/octet-stream``, and the event (itself
Megolm-encrypted) carries an ``EncryptedFile`` in ``file`` instead of ``url``: the
content URI, the key as a JSON Web Key, the IV, and the SHA-256 of the *ciphertext*, so
a receiver checks what it downloaded before it decrypts. Only version ``v2`` is read
(``v1`` counted the whole IV as random, and the spec retired it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

VERSION = "v2"


class AttachmentError(Exception):
    """An encrypted file that cannot be read: ``reason`` says why (no key material)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _unpadded(data: bytes, *, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(data).decode().rstrip("=")


def _decode(text: object, *, urlsafe: bool = False) -> bytes:
    if not isinstance(text, str):
        raise AttachmentError("a field is missing")
    padded = text + "=" * (-len(text) % 4)
    try:
        if urlsafe:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except ValueError:
        raise AttachmentError("a field is not base64") from None


def _aes_ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    transform = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    return transform.update(data) + transform.finalize()


def encrypt(plaintext: bytes) -> tuple[bytes, dict[str, Any]]:
    """The ciphertext to upload, and the ``file`` object (without its ``url``)."""
    key = os.urandom(32)
    iv = os.urandom(8) + bytes(8)
    ciphertext = _aes_ctr(key, iv, plaintext)
    info: dict[str, Any] = {
        "key": {
            "kty": "oct",
            "key_ops": ["encrypt", "decrypt"],
            "alg": "A256CTR",
            "k": _unpadded(key, urlsafe=True),
            "ext": True,
        },
        "iv": _unpadded(iv),
        "hashes": {"sha256": _unpadded(hashlib.sha256(ciphertext).digest())},
        "v": VERSION,
    }
    return ciphertext, info


def content_uri(file: Mapping[str, Any]) -> str:
    url = file.get("url")
    if not isinstance(url, str) or not url.startswith("mxc://"):
        raise AttachmentError("it names no content URI")
    return url


def decrypt(ciphertext: bytes, file: Mapping[str, Any]) -> bytes:
    """The plaintext of a downloaded ``EncryptedFile``; raises :class:`AttachmentError`
    for another version or algorithm, a malformed key or IV, or a hash that does not
    match (a corrupted or substituted download: nothing of it is decrypted)."""
    if file.get("v") != VERSION:
        raise AttachmentError(f"version {file.get('v')!r} is not read (only v2)")
    jwk = file.get("key")
    if not isinstance(jwk, Mapping) or jwk.get("kty") != "oct" or jwk.get("alg") != "A256CTR":
        raise AttachmentError("its key is not an A256CTR key")
    ops = jwk.get("key_ops")
    if not isinstance(ops, list) or "decrypt" not in ops:
        raise AttachmentError("its key may not decrypt")
    key = _decode(jwk.get("k"), urlsafe=True)
    iv = _decode(file.get("iv"))
    if len(key) != 32 or len(iv) != 16:
        raise AttachmentError("its key or IV has the wrong length")
    hashes = file.get("hashes")
    expected = _decode(hashes.get("sha256") if isinstance(hashes, Mapping) else None)
    if not hmac.compare_digest(hashlib.sha256(ciphertext).digest(), expected):
        raise AttachmentError("the download does not match its SHA-256")
    return _aes_ctr(key, iv, ciphertext)
