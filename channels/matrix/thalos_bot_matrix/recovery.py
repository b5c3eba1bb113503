"""The recovery key and secret storage (SSSS, ``m.secret_storage.v1.aes-hmac-sha2``).

- **Recovery key.** 32 random bytes, shown as Element shows them: the bytes ``0x8B 0x01``,
  the key, one parity byte (XOR of all before it), in base58 (Bitcoin's alphabet),
  in groups of four characters.
- **Secrets.** Each secret (a cross-signing key's seed, the key backup's key) is
  encrypted with keys derived from the recovery key and the secret's name (HKDF-SHA256,
  32 zero bytes of salt: 32 bytes for AES-256-CTR, 32 for HMAC-SHA256) and kept as the
  account's data under that name, where any of the account's clients can read it.
- **Checking a key.** The key's description (account data
  ``m.secret_storage.key.<id>``) carries an IV and the MAC of 32 zero bytes encrypted
  under the empty name, so a wrong recovery key is told apart before use.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from thalos_bot_matrix.client import JSON

ALGORITHM = "m.secret_storage.v1.aes-hmac-sha2"
ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
PREFIX = bytes([0x8B, 0x01])


class RecoveryKeyError(ValueError):
    """Not a recovery key, or not the one this secret storage was made with."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def _base58(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = ALPHABET[digit] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def _unbase58(text: str) -> bytes:
    number = 0
    for char in text:
        digit = ALPHABET.find(char)
        if digit < 0:
            raise RecoveryKeyError("a recovery key holds only base58 characters")
        number = number * 58 + digit
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


def encode_recovery_key(key: bytes) -> str:
    data = PREFIX + key
    parity = 0
    for byte in data:
        parity ^= byte
    text = _base58(data + bytes([parity]))
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


def decode_recovery_key(text: str) -> bytes:
    data = _unbase58("".join(text.split()))
    parity = 0
    for byte in data:
        parity ^= byte
    if len(data) != len(PREFIX) + 33 or not data.startswith(PREFIX) or parity != 0:
        raise RecoveryKeyError("not a recovery key (its prefix, length or parity is wrong)")
    return data[len(PREFIX) : -1]


def new_key() -> bytes:
    return os.urandom(32)


def _keys(key: bytes, name: str) -> tuple[bytes, bytes]:
    derived = HKDF(algorithm=hashes.SHA256(), length=64, salt=bytes(32), info=name.encode())
    both = derived.derive(key)
    return both[:32], both[32:]


def _ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    worker = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    return worker.update(data) + worker.finalize()


def encrypt(key: bytes, name: str, secret: str, iv: bytes | None = None) -> JSON:
    """``secret`` encrypted for the account data entry ``name``."""
    aes, mac_key = _keys(key, name)
    nonce = bytearray(iv if iv is not None else os.urandom(16))
    nonce[8] &= 0x7F  # as the spec asks: the counter cannot overflow into the nonce
    ciphertext = _ctr(aes, bytes(nonce), secret.encode())
    mac = hmac.new(mac_key, ciphertext, hashlib.sha256).digest()
    return {"iv": b64(bytes(nonce)), "ciphertext": b64(ciphertext), "mac": b64(mac)}


def decrypt(key: bytes, name: str, sealed: JSON) -> str:
    """The secret in ``sealed`` (one key's entry of an account data's ``encrypted``)."""
    aes, mac_key = _keys(key, name)
    ciphertext = unb64(str(sealed.get("ciphertext")))
    mac = hmac.new(mac_key, ciphertext, hashlib.sha256).digest()
    if not hmac.compare_digest(mac, unb64(str(sealed.get("mac")))):
        raise RecoveryKeyError(f"the secret {name} does not open with this recovery key")
    return _ctr(aes, unb64(str(sealed.get("iv"))), ciphertext).decode()


def key_description(key: bytes) -> JSON:
    """What ``m.secret_storage.key.<id>`` holds: the algorithm and the key's check."""
    check = encrypt(key, "", "\0" * 32)
    return {"algorithm": ALGORITHM, "iv": check["iv"], "mac": check["mac"]}


def check_key(key: bytes, description: JSON) -> None:
    """Raise unless ``key`` is the one ``description`` was made for."""
    if description.get("algorithm") != ALGORITHM:
        raise RecoveryKeyError("the secret storage key uses another algorithm")
    iv = description.get("iv")
    if not isinstance(iv, str):
        raise RecoveryKeyError("the secret storage key has no check")
    expected = encrypt(key, "", "\0" * 32, unb64(iv))["mac"]
    if not hmac.compare_digest(unb64(expected), unb64(str(description.get("mac")))):
        raise RecoveryKeyError("this is not the account's recovery key")
