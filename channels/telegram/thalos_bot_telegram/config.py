"""``[channels.telegram]``: who may talk to the bot, and how it talks back."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from thalos_bot.channels import settings as kit
from thalos_bot.channels.delivery.view import StreamMode
from thalos_bot.config.types import Seconds
from thalos_bot_telegram.limits import LIMITS

WEBHOOK_BODY_LIMIT = 1 << 20
"""Bytes an update posted to the webhook listener may weigh (Telegram's are a few KiB);
past it, 413."""


class TelegramConfig(kit.RetryingSettings):
    users_key: ClassVar[str] = "allowed_user_ids"
    allowed_user_ids: list[int] = Field(default_factory=list, validate_default=True)
    """Telegram user ids allowed to talk to the bot. Everyone else is ignored silently."""
    groups: list[int] = Field(default_factory=list)
    """Group and supergroup chat ids the bot serves (e.g. -1001234567890). In a listed
    group it answers allowed users who mention it or reply to it; every other group is
    ignored. Default: none."""
    quote_max_chars: int = Field(1500, ge=0, le=20_000)
    """How much of a replied-to message is quoted to the model (0: none)."""
    base_url: str | None = Field(None, pattern=r"^https?://\S+$")
    """Root URL of a Bot API server (self-hosted, or a test fake); ``/bot<token>`` is
    appended. Default: Telegram's own."""
    streaming: StreamMode = "draft"
    """How an answer shows while it is written: ``draft`` (sendMessageDraft previews, then
    one final message), ``edit`` (one message edited in place) or ``off`` (final only)."""
    poll_timeout: Seconds = 30.0
    """Long-poll timeout of getUpdates."""
    request_timeout: Seconds = 10.0
    """Network timeout of one Bot API call (added to poll_timeout for getUpdates)."""
    stall_timeout: Seconds | None = None
    """The watchdog restarts a getUpdates that has been in flight this long. Default:
    poll_timeout + request_timeout + 15 s."""
    chat_min_interval: Seconds = LIMITS.chat_min_interval
    """Least time between two visible updates (message, edit) in one chat; drafts are
    paced the same way on their own."""
    global_max_rate: float = Field(LIMITS.global_rate, gt=0, le=30)
    """Most Bot API calls per second across all chats (Telegram allows about 30)."""
    typing_interval: Seconds = 4.5
    poll_retry_max: Seconds = 1.5
    """Longest wait between two getUpdates tries while Telegram is unreachable or
    answers 5xx, so that the bot hears again soon after an outage ends (a 429 or 409
    is waited out as long as it says)."""
    conflict_retries: int = Field(5, ge=0, le=100)
    """How often a 409 Conflict is retried before the daemon exits (code 78)."""
    conflict_backoff: Seconds = 2.0
    """First wait after a 409; it doubles up to ``conflict_backoff_max``. With the default
    5 retries the daemon gives up after about 50 s, inside systemd's start timeout."""
    conflict_backoff_max: Seconds = 20.0
    drain_max: Seconds = 25.0
    """At shutdown, replies still queued while a chat waits out a 429 may take longer
    than ``drain_timeout`` to go out, but never longer than this."""
    album_settle: Seconds = 1.0
    """An album's photos arrive as separate messages: once none has come for this long
    after the last one, they go to the model together as one turn."""
    mode: Literal["polling", "webhook"] = "polling"
    """How updates arrive: ``polling`` (getUpdates, one process per token) or
    ``webhook`` (Telegram posts them to ``webhook_url``; any number of replicas sharing
    a PostgreSQL store). See docs/replicas.md."""
    webhook_url: str | None = Field(None, pattern=r"^https://\S+$", max_length=2000)
    """The public HTTPS address Telegram posts updates to (the balancer in front)."""
    webhook_listen: str = Field("127.0.0.1:8081", pattern=r"^\S+:\d{1,5}$")
    """Where this replica's webhook listener binds (host:port); also /healthz, /readyz."""
    webhook_max_connections: int = Field(40, ge=1, le=100)
    """setWebhook's max_connections: parallel deliveries Telegram may make."""
    webhook_header_timeout: Seconds = Field(10.0, gt=0, le=300)
    """How long a connection to the webhook listener may take to send a request's
    headers before it is dropped (Telegram and the balancer send theirs at once)."""
    webhook_connection_cap: int = Field(256, ge=8, le=65_536)
    """Connections the webhook listener holds open at once, at most (kept to a third of
    the process's free descriptors too); at the cap, the oldest one still waiting for
    its headers makes way. Not ``webhook_max_connections``, which is what Telegram is
    asked to use: this one must leave room above it for the balancer's health checks."""
    webhook_rate_limit: int = Field(6000, ge=0, le=1_000_000)
    """Requests a minute from one address to the webhook listener, at most (0: no
    limit); past it 429 with Retry-After (Telegram delivers the update again later).
    Generous: behind a balancer that hides the client's address every delivery comes
    from its one address (docs/replicas.md, "The listener's bounds")."""
    webhook_rate_burst: int = Field(1000, ge=1, le=100_000)
    """Requests one address may send at once before ``webhook_rate_limit`` paces it
    (Telegram catching up after an outage sends a backlog at once)."""
    webhook_forwarded_allow_ips: list[str] = Field(default_factory=list)
    """The balancer's addresses (e.g. ``["10.0.0.5"]``), whose X-Forwarded-For is
    believed: the rate limit then counts each client's own address. Empty: only a
    balancer on 127.0.0.1 is believed."""
    lease_seconds: Seconds = 15.0
    """Webhook mode: how long a replica's hold on a conversation lasts unless renewed
    (renewed every third of it); a dead replica's conversations move on after this."""

    # "@alice" is what people try first; Telegram allowlists numeric ids only.
    _no_usernames = kit.numbers_only(
        "allowed_user_ids",
        lambda item: (
            f"{item!r} is not a user id: allowed_user_ids takes numeric ids "
            "(e.g. 123456789), not usernames; `thalos-bot telegram pair` finds yours and adds it"
        ),
        signed=True,
    )
    # A disabled section may wait for `thalos-bot telegram pair` to add someone.
    _listed = kit.listed_when_enabled(
        "allowed_user_ids",
        "list the Telegram user ids allowed to talk to the bot, e.g. "
        "allowed_user_ids = [123456789]; an empty list never means everyone "
        "(`thalos-bot telegram pair` finds your id and adds it)",
    )
    _trimmed = kit.without_trailing_slash("base_url")
    _positive = kit.each_number(
        "allowed_user_ids",
        lambda uid: uid > 0,
        lambda uid: f"user ids are positive integers, not {uid!r}",
    )
    _group_ids = kit.each_number(
        "groups",
        lambda gid: gid < 0,
        lambda gid: f"group chat ids are negative (e.g. -1001234567890), not {gid!r}",
    )

    @model_validator(mode="after")
    def _stall_after_poll(self) -> TelegramConfig:
        if self.stall_timeout is not None and self.stall_timeout <= self.poll_timeout:
            raise ValueError("stall_timeout: must be longer than poll_timeout")
        if self.webhook_connection_cap <= self.webhook_max_connections:
            raise ValueError(
                "webhook_connection_cap: must be above webhook_max_connections (the "
                "deliveries Telegram may make at once), to leave room for health checks"
            )
        if self.mode == "webhook" and self.enabled and self.webhook_url is None:
            raise ValueError(
                'webhook_url: mode = "webhook" needs the public HTTPS address Telegram '
                'posts to, e.g. webhook_url = "https://bot.example.com/telegram"'
            )
        return self

    @property
    def stall_after(self) -> float:
        # stall_timeout, when set, is above poll_timeout: never 0
        return self.stall_timeout or self.poll_timeout + self.request_timeout + 15.0
