"""Which of a user's devices get the bot's room keys (``trust`` in ``[channels.matrix]``).

- ``tofu`` (the default, Element's behaviour today): every device whose keys are validly
  self-signed, verified or not (a ``matrix_unverified_device`` warning once per device).
- ``cross-signed``: only devices their owner cross-signed: signed by the user's
  self-signing key, itself signed by the user's master key. The master key is trusted
  on first use: the first one seen for a user is kept in the store, and if it changes
  later, none of that user's devices get keys until the operator removes the user's
  pinned key (``matrix_master_key_changed``). A device an allowed user verified with
  emoji (:mod:`.sas`) is trusted too, cross-signed or not, and a master key that was in
  that verification's MAC is pinned in place of the first-seen one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import structlog

from thalos_bot_matrix.client import JSON
from thalos_bot_matrix.signing import only_key, signed_by

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Device
    from thalos_bot_matrix.crypto_store import CryptoStore

log = structlog.get_logger(__name__)

Trust = Literal["tofu", "cross-signed"]


def cross_signed(
    user: str, answer: JSON, devices: list[Device], store: CryptoStore
) -> list[Device]:
    """Of ``devices`` (from ``answer``, a ``/keys/query`` answer), those ``user``
    cross-signed under a master key trusted on first use."""
    master_part = answer.get("master_keys")
    ssk_part = answer.get("self_signing_keys")
    master = master_part.get(user) if isinstance(master_part, dict) else None
    self_signing = ssk_part.get(user) if isinstance(ssk_part, dict) else None
    master_key, ssk = only_key(master), only_key(self_signing)
    if master_key is None or ssk is None or not isinstance(self_signing, dict):
        return []
    pinned = store.secrets.get(f"master:{user}")
    if pinned is None:
        store.put_secret(f"master:{user}", master_key)  # saved with the next change
    elif pinned != master_key:
        log.warning("matrix_master_key_changed", user=user)
        return []
    if not signed_by(self_signing, user, master_key, master_key):
        return []
    listed = answer.get("device_keys")
    mine = listed.get(user) if isinstance(listed, dict) else None
    found: list[Device] = []
    for device in devices:
        keys = mine.get(device.device_id) if isinstance(mine, dict) else None
        if isinstance(keys, dict) and signed_by(keys, user, ssk, ssk):
            found.append(device)
    return found


def verified(store: CryptoStore, device: Device) -> bool:
    """Whether ``device`` (with these keys) was verified with emoji (:mod:`.sas`)."""
    return store.secrets.get(f"verified:{device.key}") == device.ed25519
