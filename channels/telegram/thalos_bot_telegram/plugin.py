"""The Telegram channel's running side, as its manifest's ``runtime`` names it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from telegram import Update

from thalos_bot.channels import notices
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.downloads import FileDownloads
from thalos_bot.channels.intake.files import WithFiles
from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError, InboundMessage
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Runtime
from thalos_bot.channels.waiting import Waiting
from thalos_bot.cluster.fence import LaneFence, sharing
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.media.limits import TELEGRAM_DOWNLOAD_LIMIT
from thalos_bot_telegram.adapter import TelegramAdapter
from thalos_bot_telegram.approvals import TelegramApprovals
from thalos_bot_telegram.client import (
    bot_id_of,
    build_bot,
    known_username,
    quiet_transport_loggers,
    read_token,
    register_commands,
    start_bot_explained,
)
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.inbound import GUARD, Admission, admit_each
from thalos_bot_telegram.intake import TelegramFiles
from thalos_bot_telegram.poller import Poller
from thalos_bot_telegram.updates import decode_batch, update_id_of
from thalos_bot_telegram.webhook import (
    INTERRUPTED,
    chat_lane,
    polling_alone,
    webhook_intake,
)

CHANNEL = ChannelId("telegram")


@asynccontextmanager
async def _open(config: TelegramConfig, host: ChannelHost) -> AsyncIterator[ChannelPair]:
    quiet_transport_loggers()
    token = read_token()
    store = host.storage
    # Refused before anything opens: webhook mode needs the shared store.
    webhook_store = _store_url(store.url) if config.mode == "webhook" else ""
    bot = build_bot(token, config)
    username, _ = await start_bot_explained(bot)
    admission = Admission(
        CHANNEL,
        frozenset(config.allowed_user_ids),
        host.seats("telegram", config),
        groups=frozenset(config.groups),
        bot_id=bot_id_of(token),
        username=lambda: known_username(bot),
        quote_max_chars=config.quote_max_chars,
    )
    inlet = Inlet(CHANNEL)
    rendering = Rendering(
        mode=config.streaming,
        typing_interval=config.typing_interval,
        backoff_initial=config.backoff_initial,
        backoff_max=config.backoff_max,
    )
    marks = MarkBook(host.marks, CHANNEL)
    known = {int(k): mark for k, mark in (await marks.load()).items() if k.lstrip("-").isdigit()}
    downloads = FileDownloads(config.request_timeout, limit=TELEGRAM_DOWNLOAD_LIMIT)
    exits = AsyncExitStack()
    try:
        async with anyio.create_task_group() as group:
            adapter = TelegramAdapter(
                bot,
                group,
                rendering,
                chat_min_interval=config.chat_min_interval,
                global_max_rate=config.global_max_rate,
                marks=marks,
                known=known,
            )
            group.start_soon(marks.run, name="telegram-marks")

            notify = inlet.notify  # by address: a forum topic's is "<chat>:<thread>"
            intake = host.intake(
                inlet,
                TelegramFiles(bot, downloads),
                group,
                text_file_max_chars=config.text_file_max_chars,
                album_settle=config.album_settle,
            )
            waiting = await Waiting.kept("telegram", host)  # polling: see before_ack
            approvals = TelegramApprovals(bot, admission.seats, adapter.put)
            adapter.asker = approvals.ask
            inlet.stopped = approvals.withdraw_all  # the receiving side's stop comes first

            def handle(update: Update) -> None:
                if update.callback_query is not None:
                    waiting.became(str(update.update_id), None, group)  # withdrawn at a stop
                    group.start_soon(approvals.on_callback, update.callback_query)
                    return
                # A failure in admission is logged by admit_each (no notice: the
                # sender may be a stranger); one after it also tells the person.
                admitted = waiting.became(str(update.update_id), admission.admit(update), group)
                if admitted is None:
                    return
                base = admitted.base if isinstance(admitted, WithFiles) else admitted
                try:
                    if isinstance(admitted, InboundMessage):
                        intake.pass_text(admitted)
                    elif isinstance(admitted, WithFiles):
                        intake.take(admitted)
                    else:
                        notify(admitted.conversation_id, notices.only_text())
                except Exception as exc:  # noqa: BLE001 - see guard: one update only
                    GUARD.failed(
                        exc,
                        conversation=base.conversation_id,
                        notify=notify,
                        update_id=update.update_id,
                    )

            def dispatch(updates: Sequence[Update]) -> None:
                admit_each(updates, handle)

            group.start_soon(register_commands, bot, config)
            if config.mode == "webhook":
                cluster = await exits.enter_async_context(
                    webhook_intake(
                        config,
                        webhook_store,
                        bot,
                        bot_id=bot_id_of(token) or 0,
                        dispatch=adapter.watching(dispatch),
                        interrupted=lambda chat: notify(ConversationId(chat), INTERRUPTED),
                        group=group,
                        share=adapter.share_rate,
                        obey=adapter.hold,
                    )
                )
                adapter.gate = LaneFence(
                    cluster.leases, cluster.lost, cluster.unanswered, chat_lane, group=group
                )
                if cluster.holds is not None:
                    adapter.told = sharing(cluster.holds, group)  # 429s, for every replica
                if host.fence is not None:
                    host.fence.book = cluster.leases  # turn commits check its tokens
                # Taking no more updates, then /readyz 503, before anything else (the
                # step added last runs first).
                inlet.stop_first(cluster.listener.drain)
                inlet.stop_first(cluster.taking.cancel)
                inlet.redelivers = True  # what is not started goes back to the inbox
                pair = ChannelPair(
                    inlet,
                    adapter,
                    f"telegram: webhook on {config.webhook_listen} for {config.webhook_url}",
                    receiving=cluster.receiving,
                    health=cluster.health,
                )
            else:
                if store.kind == "postgresql" and store.url is not None:
                    await exits.enter_async_context(
                        polling_alone(store.url, config.lease_seconds, group)
                    )
                poller = Poller(bot, config, adapter.watching(dispatch))
                adapter.account.catch_up = poller.caught_up
                poller.peeked = lambda updates: admit_each(updates, adapter.saw)
                inlet.taken = waiting.taken  # written before the pump has it

                async def before_ack(updates: Sequence[Update]) -> None:
                    await waiting.arrived({str(u.update_id): u.to_dict() for u in updates})
                    await adapter.noting(updates)

                poller.before_ack = before_ack
                # Confirmed to Telegram, never taken by the pump: handed over first.
                held = decode_batch(waiting.again(lambda event: str(update_id_of(event))), bot)
                poller.offset = held.next_offset or 0
                poller.dispatch(sorted(held.updates, key=lambda update: update.update_id))
                inlet.receive_until_stopped(group, poller.run, name="telegram-polling")
                name = f"@{username}" if username else "(Telegram not reachable yet)"
                pair = ChannelPair(
                    inlet,
                    adapter,
                    f"telegram: polling as {name}",
                    receiving=poller.receiving,
                    health=poller.health,
                    retrying=poller.failed_once,
                )

            yield pair
            # Answers still waiting out a 429 get until its retry_after ends (up to
            # drain_max) rather than being dropped at the plain drain_timeout.
            await adapter.drain_at_shutdown(config.drain_timeout, config.drain_max)
            await marks.close()
            with anyio.CancelScope(shield=True):
                await exits.aclose()  # webhook: the leases released, after the answers
            group.cancel_scope.cancel()
    finally:
        inlet.close()
        with anyio.CancelScope(shield=True):
            await exits.aclose()
            await downloads.aclose()
            await bot.shutdown()


def _store_url(url: str | None) -> str:
    if url is None:
        raise ChannelFatalError(
            'telegram: mode = "webhook" takes updates into the shared store: set '
            '[storage] url = "postgresql://user@host/database" (the replicas share it)',
            EXIT_CONFIG,
        )
    return url


plugin = Runtime(TelegramConfig, _open)
