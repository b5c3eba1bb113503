"""The recovery key and secret storage (SSSS, ``m.secret_storage.v1.aes-hmac-sha2``), by
mautrix's :mod:`mautrix.crypto.ssss`.

- **Recovery key.** 32 random bytes, shown as Element shows them: the bytes ``0x8B 0x01``,
  the key, one parity byte (XOR of all before it), in base58 (Bitcoin's alphabet),
  in groups of four characters.
- **Secrets.** Each secret (a cross-signing key's seed, the key backup's key) is
  encrypted with keys derived from the recovery key and the secret's name (HKDF-SHA256,
  32 zero bytes of salt: 32 bytes for AES-256-CTR, 32 for HMAC-SHA256) and kept as the
  account's data under that name, where any of the account's clients can read it. The
  secrets are kept, here and in the store, as base64 text.
- **Checking a key.** The key's description (account data
  ``m.secret_storage.key.<id>``) carries an IV and the MAC of 32 zero bytes encrypted
  under the empty name, so a wrong recovery key is told apart before use.
"""

from __future__ import annotations

import base64
import hmac
import os
from typing import TYPE_CHECKING

from thalos_bot_matrix.b64 import b64, unb64
from thalos_bot_matrix.client import JSON

if TYPE_CHECKING:
    from mautrix.crypto.ssss.key import Key

# mautrix's crypto is imported where it is used: with encryption off, it is not loaded.
ALGORITHM = "m.secret_storage.v1.aes-hmac-sha2"
__all__ = ["ALGORITHM", "RecoveryKeyError", "b64", "unb64"]


class RecoveryKeyError(ValueError):
    """Not a recovery key, or not the one this secret storage was made with."""


def encode_recovery_key(key: bytes) -> str:
    from mautrix.crypto.ssss.util import encode_base58_recovery_key

    return encode_base58_recovery_key(key)


def decode_recovery_key(text: str) -> bytes:
    """The key in ``text``, whatever whitespace a copy and paste put inside it (line
    breaks, tabs, no-break spaces)."""
    from mautrix.crypto.ssss.util import decode_base58_recovery_key

    try:
        key = decode_base58_recovery_key("".join(text.split()))
    except ValueError:
        raise RecoveryKeyError("a recovery key holds only base58 characters") from None
    if key is None:
        raise RecoveryKeyError("not a recovery key (its prefix, length or parity is wrong)")
    return key


def new_key() -> bytes:
    return os.urandom(32)


def storage_key(key: bytes) -> Key:
    from mautrix.crypto.ssss.key import Key, KeyMetadata
    from mautrix.crypto.ssss.types import Algorithm

    return Key(id="", key=key, metadata=KeyMetadata(algorithm=Algorithm.AES_HMAC_SHA2))


def encrypt(key: bytes, name: str, secret: str) -> JSON:
    """``secret`` (base64 text) encrypted for the account data entry ``name``; raises
    ValueError for text that is not base64 (rather than keep only what decodes)."""
    try:
        raw = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
    except ValueError:
        raise ValueError(f"the secret {name} is not base64 text") from None
    sealed: JSON = storage_key(key).encrypt(name, raw).serialize()
    return sealed


def decrypt(key: bytes, name: str, sealed: JSON) -> str:
    """The secret (base64 text) in ``sealed`` (one key's entry of an account data's
    ``encrypted``)."""
    from mautrix.crypto.ssss.types import EncryptedKeyData

    data = EncryptedKeyData(*(str(sealed.get(part)) for part in ("ciphertext", "iv", "mac")))
    try:
        return b64(storage_key(key).decrypt(name, data))
    except ValueError:
        raise RecoveryKeyError(f"the secret {name} does not open with this recovery key") from None


def key_description(key: bytes) -> JSON:
    """What ``m.secret_storage.key.<id>`` holds: the algorithm and the key's check."""
    from mautrix.crypto.ssss.util import calculate_hash

    nonce = bytearray(os.urandom(16))
    nonce[8] &= 0x7F  # bit 63 cleared, as for every secret (and as Element does)
    iv = b64(bytes(nonce)).rstrip("=")
    return {"algorithm": ALGORITHM, "iv": iv, "mac": calculate_hash(key, iv)}


def check_key(key: bytes, description: JSON) -> None:
    """Raise unless ``key`` is the one ``description`` was made for (a malformed check
    reads as another key's)."""
    from mautrix.crypto.ssss.util import calculate_hash

    if description.get("algorithm") != ALGORITHM:
        raise RecoveryKeyError("the secret storage key uses another algorithm")
    iv, mac = description.get("iv"), description.get("mac")
    if not isinstance(iv, str) or not isinstance(mac, str):
        raise RecoveryKeyError("the secret storage key has no check")
    try:
        right = hmac.compare_digest(calculate_hash(key, iv).encode(), mac.rstrip("=").encode())
    except (ValueError, TypeError, OverflowError):
        right = False
    if not right:
        raise RecoveryKeyError("this is not the account's recovery key")
