"""Base64 text as Matrix keeps secrets and seeds: written padded, read with or without
its padding."""

from __future__ import annotations

import base64


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))
