"""Signal's wire for the kit's delivery engine: signal-cli's verbs, what their failures
mean, and Signal's limits.

- ``send`` answers with the message's timestamp, its id on Signal (a group answer quotes
  the message it answers by it).
- Answers are not streamed: Signal shows an edited message as "edited", its apps take
  an edit only within 24 hours and ten per message, and each edit is a new message (and
  notification) on every recipient's devices. The engine sends each answer complete
  (``rendering`` "off"); ``edit`` only closes an approval question with its outcome.
- A send in doubt (``resend="find"``) is settled by the :mod:`.ledger`.
- Errors: a rate limit (``-5``) carries each recipient's ``retryAfterSeconds``; an
  untrusted identity (``-4``, a changed safety number) is refused until the operator
  trusts it (docs/signal.md); an I/O error may have reached some devices (in doubt).
"""

from __future__ import annotations

import base64

import structlog

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits, file_name, with_controls_line
from thalos_bot.channels.text.measure import utf16_len
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot_signal import rpc
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.ledger import Ledger, NotOwnerError
from thalos_bot_signal.rpc import ConnectionLostError, DaemonDownError, RpcError, SignalRpc
from thalos_bot_signal.text import render, styled

log = structlog.get_logger(__name__)

LIMIT = 2000
"""signal-cli sends a text over 2,000 bytes as a long-text attachment (the apps show
"Read more"); answers are split at 2,000 UTF-16 units so that a part is one message."""
GLOBAL_PER_SECOND = 5.0
"""Signal's server rate-limits an account that sends in bursts; the bot keeps to a few
messages a second across its chats."""

Controls = str
"""A question's choices, as a line of text (Signal has no buttons)."""


class SignalWire:
    name = "signal"

    def __init__(
        self, rpc: SignalRpc, ledger: Ledger, *, send_interval: float, probe_wait: float
    ) -> None:
        self._rpc = rpc
        self._ledger = ledger
        self._probe_wait = probe_wait
        self.limits = WireLimits(
            message_units=LIMIT,
            caption_units=LIMIT,
            chat_min_interval=send_interval,
            global_rate=GLOBAL_PER_SECOND,
            resend="find",
            chat_burst=2,
            typing_interval=10.0,  # the indicator shows for 15 s
        )

    def render(self, source: str) -> str:
        rendered = render(source)
        return rendered if utf16_len(styled(rendered)[0]) <= LIMIT else ""

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, RpcError):
            return _refusal(exc)
        if isinstance(exc, DaemonDownError | NotOwnerError):
            return Classified(Failure.NOT_SENT, type(exc).__name__)
        if isinstance(exc, ConnectionLostError | TimeoutError | TypeError):
            return Classified(Failure.MAYBE_SENT, type(exc).__name__)
        return None

    async def send(self, chat: Place, message: Outgoing[Controls]) -> str:
        params = {**chat.target(), **_body(message)}
        if message.reply_to is not None and chat.kind == "group":
            params.update(_quote(message.reply_to))
        return await self._post(chat, message.key, params)

    async def edit(self, chat: Place, ref: str, message: Outgoing[Controls]) -> None:
        params = {**chat.target(), **_body(message), "editTimestamp": int(ref)}
        await self._rpc.call("send", params)

    async def upload(
        self, chat: Place, image: ToolImage | VoiceClip, caption: Outgoing[Controls]
    ) -> str:
        data = base64.b64encode(image.data).decode("ascii")
        params: dict[str, object] = {
            **chat.target(),
            "message": caption.text,
            "attachments": [f"data:{image.media_type};filename={file_name(image)};base64,{data}"],
        }
        if isinstance(image, VoiceClip):
            # signal-cli 0.14.2+: the attachment is shown as a voice message, with a
            # play button, instead of as a file.
            params["voiceNote"] = True
        return await self._post(chat, caption.key, params)

    async def typing(self, chat: Place, thread: str | None) -> None:
        await self._rpc.call("sendTyping", chat.target())

    async def find(self, chat: Place, key: str) -> str | None:
        found = await self._ledger.wait_for(chat.id, key, self._probe_wait)
        return None if found is None else str(found)

    async def _post(self, chat: Place, key: str, params: dict[str, object]) -> str:
        await self._ledger.attempt(key, chat.id)
        result = await self._rpc.call("send", params)
        timestamp = result.get("timestamp") if isinstance(result, dict) else None
        if not isinstance(timestamp, int):
            raise TypeError("send answered without a timestamp")
        self._ledger.answered(timestamp)
        return str(timestamp)


def _body(message: Outgoing[Controls]) -> dict[str, object]:
    text = with_controls_line(message)
    if message.plain:
        return {"message": text}
    shown, ranges = styled(text)
    return {"message": shown, "textStyle": ranges} if ranges else {"message": shown}


def _quote(ref: str) -> dict[str, object]:
    """A group answer's first message quotes the one it answers (``<ts>:<author>``)."""
    timestamp, _, author = ref.partition(":")
    if not timestamp.isdigit() or not author:
        return {}
    return {"quoteTimestamp": int(timestamp), "quoteAuthor": author}


def _refusal(exc: RpcError) -> Classified:
    reason = f"signal-cli error {exc.code}"
    if exc.code == rpc.RATE_LIMITED:
        return Classified(Failure.RETRY_AFTER, reason, retry_after=exc.retry_after() or 1.0)
    if exc.code == rpc.UNTRUSTED:
        log.error("signal_untrusted_identity", hint="see docs/signal.md, 'Safety numbers'")
        return Classified(Failure.REJECTED, "untrusted identity")
    if exc.code == rpc.IO_ERROR:
        return Classified(Failure.MAYBE_SENT, reason)
    if exc.code == rpc.METHOD_NOT_FOUND:
        return Classified(Failure.UNSUPPORTED, reason)
    return Classified(Failure.REJECTED, reason)  # a refused recipient, bad parameters
