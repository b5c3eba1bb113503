"""Cross-signing: the account's master, self-signing and user-signing keys, kept in
secret storage behind the recovery key, and the bot's device signed by the self-signing
key, so that clients which trust only cross-signed devices (Element's coming default,
MSC4153) still send it their room keys.

At each start with encryption (:func:`ensure`), after the device keys are uploaded:

- **Kept.** The store holds the seeds and they are the account's published keys: the
  device's signature is checked (and made if it is missing). Nothing else happens.
- **Restored.** The account has cross-signing keys the store does not hold (a new state
  folder, a new device): the recovery key (``THALOS_MATRIX_RECOVERY_KEY``) opens secret
  storage, the seeds are read from it, checked against the published keys, kept, and
  the device is signed. Without the key, it is said once in the log and the device
  stays unsigned (encryption still works, as before).
- **Bootstrapped.** The account has none: three keys are made, published (the
  homeserver may ask for the password, ``THALOS_MATRIX_PASSWORD``, as user-interactive
  auth), their seeds encrypted into secret storage under the recovery key (the one in
  the environment, or a new one, written once to a private file in the state folder for
  ``thalos-bot matrix setup-encryption`` to print and remove), and the device signed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from olm.pk import PkDecryptionError

from thalos_bot_matrix import backup, recovery
from thalos_bot_matrix.client import JSON, MatrixError, q
from thalos_bot_matrix.signing import only_key, public_of, signed_with_seed
from thalos_bot_matrix.state import _safe, folder

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)

RECOVERY_ENV = "THALOS_MATRIX_RECOVERY_KEY"
MASTER = "m.cross_signing.master"
SELF_SIGNING = "m.cross_signing.self_signing"
USER_SIGNING = "m.cross_signing.user_signing"
USAGE = {MASTER: "master", SELF_SIGNING: "self_signing", USER_SIGNING: "user_signing"}
DEFAULT_KEY = "m.secret_storage.default_key"


class CrossSigningError(Exception):
    """Cross-signing cannot be set up (the reason is safe to log)."""


def recovery_key_file(state_dir: Path, user_id: str) -> Path:
    return folder(state_dir) / f"recovery-key-{_safe(user_id)}.txt"


async def ensure(
    crypto: Crypto, *, password: str | None, recovery_key: str | None, key_file: Path
) -> str:
    """Cross-signing in place for the device: ``kept``, ``restored`` or ``bootstrapped``."""
    user = crypto.user_id
    answer = await crypto.client.call(
        "POST", "/_matrix/client/v3/keys/query", body={"device_keys": {user: []}}
    )
    master = only_key(_of(answer, "master_keys", user))
    self_signing = only_key(_of(answer, "self_signing_keys", user))
    devices = _of(answer, "device_keys", user)
    device = devices.get(crypto.device_id)
    if not isinstance(device, dict):
        raise CrossSigningError("the homeserver does not list the bot's device keys")
    held = crypto.store.secrets.get(MASTER)
    if master is not None and held is not None and public_of(held) == master:
        outcome = "kept"
    elif master is not None:
        if recovery_key is None:
            raise CrossSigningError(
                f"the account has cross-signing keys this state folder does not hold: "
                f"set {RECOVERY_ENV} to restore them"
            )
        await _restore(crypto, recovery.decode_recovery_key(recovery_key), master, self_signing)
        outcome = "restored"
    else:
        await _bootstrap(crypto, password, recovery_key, key_file)
        outcome = "bootstrapped"
    await _sign_device(crypto, device)
    _backup_on(crypto)
    return outcome


def _backup_on(crypto: Crypto) -> None:
    """New room keys backed up from now on, when the store holds the backup's key."""
    private, version = (
        crypto.store.secrets.get(backup.SECRET),
        crypto.store.secrets.get(backup.VERSION),
    )
    if private is None or version is None:
        return
    public = backup.BackupKey(recovery.unb64(private)).public_key
    crypto.backup = backup.Backup(crypto.client, version, public)


def _of(answer: JSON, section: str, user: str) -> JSON:
    part = answer.get(section)
    found = part.get(user) if isinstance(part, dict) else None
    return found if isinstance(found, dict) else {}


async def _account_data(crypto: Crypto, kind: str) -> JSON | None:
    try:
        return await crypto.client.call(
            "GET", f"/_matrix/client/v3/user/{q(crypto.user_id)}/account_data/{q(kind)}"
        )
    except MatrixError as exc:
        if exc.status == 404:
            return None
        raise


async def _put_account_data(crypto: Crypto, kind: str, content: JSON) -> None:
    await crypto.client.call(
        "PUT",
        f"/_matrix/client/v3/user/{q(crypto.user_id)}/account_data/{q(kind)}",
        body=content,
    )


async def _restore(crypto: Crypto, key: bytes, master: str, self_signing: str | None) -> None:
    default = await _account_data(crypto, DEFAULT_KEY)
    key_id = default.get("key") if default else None
    if not isinstance(key_id, str):
        raise CrossSigningError("the account has no secret storage to restore from")
    description = await _account_data(crypto, f"m.secret_storage.key.{key_id}")
    recovery.check_key(key, description or {})
    for name in USAGE:
        stored = await _account_data(crypto, name)
        encrypted = stored.get("encrypted") if stored else None
        sealed = encrypted.get(key_id) if isinstance(encrypted, dict) else None
        if not isinstance(sealed, dict):
            raise CrossSigningError(f"secret storage does not hold {name}")
        crypto.store.put_secret(name, recovery.decrypt(key, name, sealed))
    if public_of(crypto.store.secrets[MASTER]) != master or (
        self_signing is not None and public_of(crypto.store.secrets[SELF_SIGNING]) != self_signing
    ):
        raise CrossSigningError("secret storage holds other keys than the published ones")
    await crypto.store.save()
    stored = await _account_data(crypto, backup.SECRET)
    encrypted = stored.get("encrypted") if stored else None
    sealed = encrypted.get(key_id) if isinstance(encrypted, dict) else None
    if isinstance(sealed, dict):
        private = recovery.decrypt(key, backup.SECRET, sealed)
        crypto.store.put_secret(backup.SECRET, private)
        try:
            await backup.restore(crypto.client, crypto.store, recovery.unb64(private))
        except (ValueError, PkDecryptionError, MatrixError) as exc:
            reason = str(exc) if isinstance(exc, ValueError | MatrixError) else "undecryptable"
            log.warning("matrix_key_backup_not_restored", reason=reason)
    log.info("matrix_cross_signing_restored", master=master)


async def _bootstrap(
    crypto: Crypto, password: str | None, recovery_key: str | None, key_file: Path
) -> None:
    user = crypto.user_id
    key = recovery.decode_recovery_key(recovery_key) if recovery_key else recovery.new_key()
    for name in USAGE:
        crypto.store.put_secret(name, recovery.b64(os.urandom(32)))
    await crypto.store.save()  # the seeds before their public halves go out
    seeds = crypto.store.secrets
    key_id = recovery.b64(os.urandom(24)).replace("/", "_").replace("+", "-")
    await _put_account_data(crypto, f"m.secret_storage.key.{key_id}", recovery.key_description(key))
    for name in USAGE:
        sealed = recovery.encrypt(key, name, seeds[name])
        await _put_account_data(crypto, name, {"encrypted": {key_id: sealed}})
    await _put_account_data(crypto, DEFAULT_KEY, {"key": key_id})
    master = public_of(seeds[MASTER])
    body: JSON = {}
    for name, usage in USAGE.items():
        public = public_of(seeds[name])
        published: JSON = {"user_id": user, "usage": [usage], "keys": {f"ed25519:{public}": public}}
        if name == MASTER:
            published = crypto.sign_with_device(published)
        else:
            published = signed_with_seed(published, user, seeds[MASTER])
        body[f"{usage}_key"] = published
    await upload_with_auth(crypto, "/_matrix/client/v3/keys/device_signing/upload", body, password)
    await _new_backup(crypto, key, key_id, seeds[MASTER], master)
    if recovery_key is None:
        _write_once(key_file, recovery.encode_recovery_key(key))
        log.warning(
            "matrix_recovery_key_written",
            path=str(key_file),
            note="run `thalos-bot matrix setup-encryption` to print it once and remove it",
        )
    log.info("matrix_cross_signing_bootstrapped", master=master)


async def _new_backup(
    crypto: Crypto, key: bytes, key_id: str, master_seed: str, master: str
) -> None:
    """A key backup version, its private key in the store and in secret storage."""
    private = backup.new_private()
    auth: JSON = {"public_key": backup.BackupKey(private).public_key}
    signed = signed_with_seed(crypto.sign_with_device(auth), crypto.user_id, master_seed)
    crypto.store.put_secret(backup.SECRET, recovery.b64(private))
    await backup.create(crypto.client, crypto.store, signed)
    sealed = recovery.encrypt(key, backup.SECRET, recovery.b64(private))
    await _put_account_data(crypto, backup.SECRET, {"encrypted": {key_id: sealed}})


async def upload_with_auth(crypto: Crypto, path: str, body: JSON, password: str | None) -> None:
    """POST ``body``; if the homeserver asks for user-interactive auth, log in with the
    account's password within that session."""
    try:
        await crypto.client.call("POST", path, body=body)
    except MatrixError as exc:
        if exc.status != 401 or exc.session is None:
            raise
        session = exc.session
    else:
        return
    if password is None:
        raise CrossSigningError(
            "the homeserver asks for the account's password to publish cross-signing keys: "
            "set THALOS_MATRIX_PASSWORD"
        )
    auth = {
        "type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": crypto.user_id},
        "password": password,
        "session": session,
    }
    await crypto.client.call("POST", path, body={**body, "auth": auth})


async def _sign_device(crypto: Crypto, device: JSON) -> None:
    seed = crypto.store.secrets[SELF_SIGNING]
    public = public_of(seed)
    signatures = device.get("signatures")
    mine = signatures.get(crypto.user_id) if isinstance(signatures, dict) else None
    if isinstance(mine, dict) and f"ed25519:{public}" in mine:
        return
    bare = {k: v for k, v in device.items() if k not in {"unsigned", "signatures"}}
    signed = signed_with_seed(bare, crypto.user_id, seed)
    answer = await crypto.client.call(
        "POST",
        "/_matrix/client/v3/keys/signatures/upload",
        body={crypto.user_id: {crypto.device_id: signed}},
    )
    failures = answer.get("failures")
    if isinstance(failures, dict) and failures:
        raise CrossSigningError("the homeserver refused the device's signature")
    log.info("matrix_device_cross_signed", device=crypto.device_id)


async def sign_user(crypto: Crypto, master: JSON) -> bool:
    """Another user's published master key (``master``), verified by emoji, signed with
    the account's user-signing key (what Element does after verifying a user); whether
    it was uploaded."""
    seed = crypto.store.secrets.get(USER_SIGNING)
    user, public = master.get("user_id"), only_key(master)
    if seed is None or not isinstance(user, str) or public is None:
        return False
    bare = {k: v for k, v in master.items() if k not in {"unsigned", "signatures"}}
    signed = signed_with_seed(bare, crypto.user_id, seed)
    answer = await crypto.client.call(
        "POST", "/_matrix/client/v3/keys/signatures/upload", body={user: {public: signed}}
    )
    failures = answer.get("failures")
    if isinstance(failures, dict) and failures:
        log.warning("matrix_user_signature_refused", user=user)
        return False
    log.info("matrix_user_cross_signed", user=user)
    return True


def _write_once(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
