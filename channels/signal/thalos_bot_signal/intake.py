"""Files sent with a Signal message, for the kit's intake: signal-cli downloads each
attachment as it receives the message and hands out its bytes by id
(``getAttachment``, base64, with the sender or the group that sent it)."""

from __future__ import annotations

import base64
import binascii

import structlog

from thalos_bot.channels.intake.files import FetchLimit, RemoteFile
from thalos_bot_signal.rpc import FAILED, SignalRpc

log = structlog.get_logger(__name__)

LIMIT = FetchLimit(100 * 1024 * 1024, "Signal")
"""The largest attachment asked of the daemon (Signal's own limit is about 100 MiB)."""


class SignalFiles:
    def __init__(self, rpc: SignalRpc) -> None:
        self._rpc = rpc
        self.senders: dict[str, dict[str, str]] = {}
        """Each attachment's sender (``recipient``) or group (``groupId``), by id."""

    async def fetch(self, file: RemoteFile) -> bytes:
        where = self.senders.pop(file.ref, {})
        LIMIT.claim(file)
        try:
            result = await self._rpc.call("getAttachment", {"id": file.ref, **where})
            data = result.get("data") if isinstance(result, dict) else None
            if not isinstance(data, str):
                raise LIMIT.refusal(too_big=False)
            return base64.b64decode(data, validate=True)
        except (*FAILED, binascii.Error) as exc:
            log.warning("signal_file_download_failed", error=type(exc).__name__)
            raise LIMIT.refusal(too_big=False) from None
