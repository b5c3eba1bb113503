"""``thalos-bot signal pair``: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_over`) around Signal's part: it
reads signal-cli's event stream for a one-to-one message holding the code (nobody is
answered meanwhile; a stream that ends is opened again), then tells the sender in that
chat. The sender is listed by their number, or by their account UUID when they do not
share their number."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass

import anyio

from thalos_bot.channels.admission.pair_command import PAIRED, Found, pair_command, told
from thalos_bot.channels.admission.pairing import PairingCode, PairingError
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot_signal.config import SignalConfig
from thalos_bot_signal.manifest import manifest
from thalos_bot_signal.rpc import FAILED, RpcError, SignalRpc, read_account


@dataclass
class SignalSide:
    rpc: SignalRpc
    link: Reconnecting

    async def reach(self) -> str:
        try:
            await self.rpc.call("listAccounts")
        except RpcError:
            pass  # started with -a: it answers, with one account
        except FAILED:
            down = "signal-cli's daemon does not answer at daemon_url; start it"
            raise PairingError(down) from None
        return "the bot's Signal number in a one-to-one chat"

    async def wait(self, code: PairingCode) -> Found | None:
        """The stream is opened again after the channel's backoff whenever it ends or
        fails (signal-cli restarted), as the daemon's receiver does, until the code
        expires."""
        with anyio.move_on_after(code.remaining):
            while True:
                try:
                    async for event in self.rpc.events(self.link.opened):
                        if (found := self._heard(event, code)) is not None:
                            return found
                    reason = "the event connection ended"
                except FAILED as exc:
                    reason = f"the event stream failed ({type(exc).__name__})"
                await self.link.failed(reason)
        return None

    def _heard(self, event: dict[str, object], code: PairingCode) -> Found | None:
        envelope = event.get("envelope")
        data = envelope.get("dataMessage") if isinstance(envelope, dict) else None
        if not isinstance(envelope, dict) or not isinstance(data, dict) or data.get("groupInfo"):
            return None
        number, uuid = envelope.get("sourceNumber"), envelope.get("sourceUuid")
        person = number if isinstance(number, str) and number else uuid
        if not isinstance(person, str) or person == self.rpc.account:
            return None
        if not code.redeem(str(data.get("message") or "")):
            return None
        return Found(person, f"{envelope.get('sourceName') or 'someone'} ({person})", person)

    async def tell(self, found: Found) -> bool:
        message = {"recipient": [str(found.reply_to)], "message": PAIRED}
        return await told(self.rpc.call("send", message), FAILED)


def _side(config: SignalConfig) -> AbstractAsyncContextManager[SignalSide]:
    """Nothing to close after: each call to the daemon is a connection of its own."""
    rpc = SignalRpc(config.daemon_url, read_account(), timeout=config.request_timeout)
    return nullcontext(SignalSide(rpc, config.reconnecting("signal_pairing")))


pair = pair_command(_side, manifest)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
