"""Signed Matrix JSON (device keys, one-time keys, cross-signing keys, a key backup's
auth data), in one place for every module: signed in mautrix's canonical form by its
signer (:mod:`mautrix.crypto.signature`, with the device's Olm account or a
cross-signing key's seed), and checked with libolm's ed25519, where a missing or
malformed signature reads as not signed rather than raising."""

from __future__ import annotations

from mautrix.crypto.signature import canonical_json, sign_olm
from olm.account import Account
from olm.pk import PkSigning
from olm.utility import OlmVerifyError, ed25519_verify

from thalos_bot_matrix.b64 import unb64
from thalos_bot_matrix.client import JSON


def canonical(value: JSON) -> str:
    """Canonical JSON (the form Matrix signs), without ``signatures`` and ``unsigned``."""
    bare = {k: v for k, v in value.items() if k not in {"signatures", "unsigned"}}
    text: str = canonical_json(bare)
    return text


def signed_by(value: JSON, user_id: str, key_name: str, ed25519: str) -> bool:
    """Whether ``value`` carries ``user_id``'s valid signature by ``ed25519:key_name``
    (a device id, or a cross-signing key's own public key)."""
    signatures = value.get("signatures")
    mine = signatures.get(user_id) if isinstance(signatures, dict) else None
    signature = mine.get(f"ed25519:{key_name}") if isinstance(mine, dict) else None
    if not isinstance(signature, str):
        return False
    try:
        ed25519_verify(ed25519, canonical(value), signature)
    except OlmVerifyError:
        return False
    return True


def signed(value: JSON, user_id: str, key_name: str, signer: Account | PkSigning) -> JSON:
    """``value`` with ``signer``'s signature added to those it has."""
    signature = str(sign_olm(dict(value), signer))
    signatures = dict(value.get("signatures") or {})
    mine = {**dict(signatures.get(user_id) or {}), f"ed25519:{key_name}": signature}
    return {**value, "signatures": {**signatures, user_id: mine}}


def signed_with_seed(value: JSON, user_id: str, seed: str) -> JSON:
    """``value`` signed by the cross-signing key whose seed (base64) is ``seed``."""
    key = PkSigning(unb64(seed))
    return signed(value, user_id, str(key.public_key), key)


def public_of(seed: str) -> str:
    """The public half of a cross-signing key's seed."""
    return str(PkSigning(unb64(seed)).public_key)


def only_key(published: object) -> str | None:
    """The one public key of a published cross-signing key (None: not exactly one)."""
    keys = published.get("keys") if isinstance(published, dict) else None
    values = list(keys.values()) if isinstance(keys, dict) else []
    return values[0] if len(values) == 1 and isinstance(values[0], str) else None
