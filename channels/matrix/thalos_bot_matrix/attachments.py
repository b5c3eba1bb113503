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
import json
from collections.abc import Mapping
from typing import Any

import structlog

from thalos_bot.media.limits import MediaRejectedError
from thalos_bot_matrix.client import MatrixClient
from thalos_bot_matrix.events import JSON, text_field

log = structlog.get_logger(__name__)

VERSION = "v2"
UNREADABLE_FILE = (
    "That encrypted file could not be read (its key or checksum did not match what "
    "was downloaded). Try sending it again."
)
OPAQUE = "application/octet-stream"
"""What an encrypted file is uploaded as (its real type is inside the event)."""


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


async def uploaded(client: MatrixClient, plaintext: bytes, name: str) -> dict[str, Any]:
    """``plaintext`` encrypted and uploaded: the event's ``file``. The server keeps only
    ciphertext; the key travels in the (encrypted) event."""
    ciphertext, file = encrypt(plaintext)
    return {**file, "url": await client.upload(ciphertext, OPAQUE, name)}


def content_uri(file: Mapping[str, Any]) -> str:
    url = file.get("url")
    if not isinstance(url, str) or not url.startswith("mxc://"):
        raise AttachmentError("it names no content URI")
    return url


def file_ref(content: JSON) -> tuple[str, str]:
    """A file event's handle for the intake and its content URI: the URI, or for an
    encrypted file the whole ``EncryptedFile`` as JSON (key and hash with it: it is never
    logged); raises :class:`MediaRejectedError` when that names no content URI."""
    sealed = content.get("file")
    if not isinstance(sealed, dict) or "url" in content:
        url = text_field(content, "url")
        return url, url
    try:
        return json.dumps(sealed), content_uri(sealed)
    except AttachmentError as exc:
        raise _unreadable(exc) from None


def url_of(ref: str) -> str:
    """The content URI of a handle :func:`file_ref` made."""
    return ref if ref.startswith("mxc://") else content_uri(json.loads(ref))


def opened(data: bytes | bytearray, ref: str) -> bytes | bytearray:
    """The file downloaded for handle ``ref``, decrypted when it is encrypted; raises
    :class:`MediaRejectedError` when it cannot be."""
    if ref.startswith("mxc://"):
        return data
    try:
        return decrypt(bytes(data), json.loads(ref))
    except AttachmentError as exc:
        raise _unreadable(exc) from None


def _unreadable(exc: AttachmentError) -> MediaRejectedError:
    log.warning("matrix_encrypted_file_unreadable", reason=exc.reason)
    return MediaRejectedError(UNREADABLE_FILE)


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
