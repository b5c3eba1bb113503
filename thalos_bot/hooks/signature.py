"""Whether a delivery was signed with the hook's secret, and what identifies it.

``github``: ``X-Hub-Signature-256: sha256=<hex>``, the HMAC-SHA256 of the raw body;
the delivery's id is ``X-GitHub-Delivery``. ``generic``: ``X-Signature: sha256=<hex>``,
the HMAC-SHA256 of ``<X-Timestamp>.<body>`` with ``X-Timestamp`` in unix seconds; a
timestamp outside :data:`WINDOW` of now is a replay (or a stale retry) and refused
with 409. Either scheme may name its delivery in ``X-Delivery-Id`` (GitHub's own header
for ``github``); without one the body's hash stands in, for the window.

Signatures are compared with :func:`hmac.compare_digest`; the secret is never logged.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from thalos_bot.hooks.store import BODY_KEY

WINDOW = 300.0
"""Seconds: how far a generic timestamp may be from now, and how long a body hash
dedupes a delivery that has no id."""
MAX_ID = 200

Scheme = Literal["github", "generic"]


@dataclass(frozen=True, slots=True)
class Checked:
    status: int
    """200: the signature holds; 401: it does not (or is missing); 409: a replay."""
    reason: str = ""
    dedupe_key: str = ""


def sign(secret: bytes, message: bytes) -> str:
    """``sha256=<hex>`` of ``message`` under ``secret`` (both schemes' header value)."""
    return "sha256=" + hmac.new(secret, message, hashlib.sha256).hexdigest()


def check(
    scheme: Scheme, secret: bytes, headers: Mapping[str, str], body: bytes, now: float
) -> Checked:
    """Verify ``body`` against ``headers`` (lower-case names) under ``scheme``."""
    if scheme == "github":
        given = headers.get("x-hub-signature-256", "")
        signed = body
        delivery = headers.get("x-github-delivery", "")
    else:
        given = headers.get("x-signature", "")
        stamp = headers.get("x-timestamp", "")
        # ASCII digits only: "²" is a digit to str.isdigit, and int() refuses it.
        if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 12:
            return Checked(401, "X-Timestamp is missing or not unix seconds")
        signed = stamp.encode() + b"." + body
        delivery = headers.get("x-delivery-id", "")
    if not given:
        return Checked(401, "the signature header is missing")
    if not hmac.compare_digest(given.encode(), sign(secret, signed).encode()):
        return Checked(401, "the signature does not match")
    if scheme == "generic" and abs(now - int(stamp)) > WINDOW:
        return Checked(409, "the timestamp is outside the replay window")
    if delivery and len(delivery) <= MAX_ID and delivery.isprintable():
        return Checked(200, dedupe_key="id:" + delivery)
    return Checked(200, dedupe_key=BODY_KEY + hashlib.sha256(body).hexdigest())
