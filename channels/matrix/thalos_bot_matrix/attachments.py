"""Attachments in encrypted rooms: AES-256-CTR over the file, as the Matrix spec
("Sending encrypted attachments") has clients do it, by mautrix's
:mod:`mautrix.crypto.attachments`.

The ciphertext is uploaded as an opaque ``application/octet-stream``, and the event
(itself Megolm-encrypted) carries an ``EncryptedFile`` in ``file`` instead of ``url``:
the content URI, the key as a JSON Web Key, the IV, and the SHA-256 of the
*ciphertext*, which is checked before anything is decrypted. What mautrix leaves to its
caller is checked here: only version ``v2`` is read (``v1`` counted the whole IV as
random, and the spec retired it), only an A256CTR key that may decrypt, and only a key
of 32 bytes and an IV of 16 in strict base64 (mautrix would take an AES-128 or -192
key, and skip what is not base64).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

VERSION = "v2"


class AttachmentError(Exception):
    """An encrypted file that cannot be read: ``reason`` says why (no key material)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _decoded(text: str) -> bytes:
    """Unpadded base64, standard or URL-safe (as senders write it), nothing else."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except ValueError:
        raise AttachmentError("a field is not base64") from None


def encrypt(plaintext: bytes) -> tuple[bytes, dict[str, Any]]:
    """The ciphertext to upload, and the ``file`` object (without its ``url``)."""
    from mautrix.crypto.attachments import encrypt_attachment  # loaded when first used

    ciphertext, file = encrypt_attachment(plaintext)
    info: dict[str, Any] = file.serialize()
    info.pop("url", None)
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
    hashes = file.get("hashes")
    digest = hashes.get("sha256") if isinstance(hashes, Mapping) else None
    key, iv = jwk.get("k"), file.get("iv")
    if not isinstance(key, str) or not isinstance(iv, str) or not isinstance(digest, str):
        raise AttachmentError("a field is missing")
    _decoded(digest)
    if len(_decoded(key)) != 32 or len(_decoded(iv)) != 16:
        raise AttachmentError("its key or IV has the wrong length")
    from mautrix.crypto.attachments import decrypt_attachment
    from mautrix.errors import DecryptionError

    try:
        plaintext = decrypt_attachment(ciphertext, key, digest, iv)
    except (DecryptionError, ValueError) as exc:
        raise AttachmentError(str(exc) or "its key or IV is malformed") from None
    return bytes(plaintext)
