"""``[channels.web]``: where the page is served and who may log in."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from thalos_bot.channels.listeners.address import is_loopback, split_listen
from thalos_bot.config.types import Seconds

DEFAULT_LISTEN = "127.0.0.1:8765"
UPLOAD_LIMIT = 20 * 1024 * 1024
"""The most one file may weigh: the Telegram channel's limit, so both refuse alike."""


class WebConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    listen: str = DEFAULT_LISTEN
    """host:port the page is served on. Loopback unless ``public = true``."""
    public: bool = False
    """Allow a non-loopback ``listen`` address. Put it behind a TLS proxy: the session
    cookie is then marked Secure."""
    public_url: str | None = Field(None, pattern=r"^https?://[^\s/]+(/\S*)?$")
    """The address people open (e.g. ``https://bot.example.org``), for the link
    ``thalos-bot web pair`` prints. Default: ``http://`` + ``listen``."""
    principals: list[str] = Field(default_factory=lambda: ["owner"])
    """The principal ids that may log in (``thalos-bot web pair --principal``). Each
    logged-in principal has one conversation, shared by all its tabs."""
    owners: list[str] = Field(default_factory=list)
    """Principals that may change things from the dashboard (pause, resume and cancel
    schedules). Default: the first of ``principals``."""
    roles: list[str] = Field(default_factory=list)
    api: bool = False
    """Serve the OpenAI-compatible API (``/v1/models``, ``/v1/chat/completions``) on
    this listener, for keys made by ``thalos-bot api key create`` (docs/api.md)."""
    api_requests_per_minute: int = Field(60, ge=1, le=100_000)
    """Requests one API key may make a minute (at once, at most this many; then evenly),
    counted for the whole bot on replicas; past it, 429 with ``Retry-After``."""
    session_days: float = Field(30.0, gt=0, le=366)
    """How long a login lasts."""
    flush_interval: Seconds = Field(0.05, gt=0, le=10)
    """How often streamed text is pushed to the page: a browser has no rate limit, so
    far more often than the pump's ``flush_interval`` (kept for Telegram)."""
    max_message_chars: int = Field(32_000, ge=100, le=1_000_000)
    """A longer chat message is refused with a notice naming the limit."""
    max_files: int = Field(10, ge=1, le=100)
    """Files in one message."""
    text_file_max_chars: int = Field(50_000, ge=1_000, le=500_000)
    """A text file longer than this is cut (with a marker saying so)."""
    header_timeout: Seconds = Field(10.0, gt=0, le=300)
    """How long a connection may take to send a request's headers before it is dropped
    (a stalled or malicious client holds nothing for longer)."""
    max_connections: int = Field(256, ge=8, le=65_536)
    """Connections open at once, at most; kept to half the process's descriptor limit
    too. At the cap, the oldest connection still waiting for its headers makes way."""
    rate_limit: int = Field(1200, ge=0, le=1_000_000)
    """Requests a minute from one address, at most (0: no limit); past it the answer is
    429 with Retry-After. Covers the page, its API and the webhooks on this listener
    (on replicas, on every replica's together: counted in the shared store)."""
    rate_burst: int = Field(200, ge=1, le=100_000)
    """Requests one address may send at once before ``rate_limit`` paces it."""
    forwarded_allow_ips: list[str] = Field(default_factory=list)
    """The TLS proxy's addresses (e.g. ``["10.0.0.5"]``), whose X-Forwarded-For and
    X-Forwarded-Proto are believed: the rate limit then counts the real client's
    address. Empty: only a proxy on 127.0.0.1 is believed."""
    keep_events: int = Field(500, ge=50, le=10_000)
    """Events kept per conversation for tabs that open or reconnect later."""

    @field_validator("listen")
    @classmethod
    def _listen_shape(cls, value: str) -> str:
        split_listen(value, DEFAULT_LISTEN)
        return value

    @field_validator("principals")
    @classmethod
    def _someone(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError('list at least one principal id that may log in, e.g. ["owner"]')
        bad = [p for p in value if not p.strip() or len(p) > 128 or ":" in p]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a principal id (1-128 characters, no ':')")
        return value

    @model_validator(mode="after")
    def _owners_are_principals(self) -> WebConfig:
        strangers = [o for o in self.owners if o not in self.principals]
        if strangers:
            raise ValueError(f"owners: {strangers[0]!r} is not one of principals")
        return self

    @model_validator(mode="after")
    def _loopback_unless_public(self) -> WebConfig:
        if not self.public and not is_loopback(self.host):
            raise ValueError(
                f"listen: {self.host} is not a loopback address; set public = true to serve "
                "other machines (behind a TLS proxy), or listen on 127.0.0.1"
            )
        if self.public and not is_loopback(self.host):
            https = (self.public_url or "").startswith("https://")
            if not self.forwarded_allow_ips or not https:
                raise ValueError(
                    "public = true serves other machines, so logins and keys must travel over "
                    'TLS: name the TLS proxy in front (forwarded_allow_ips = ["10.0.0.5"]) and '
                    'the address people open (public_url = "https://bot.example.org")'
                )
        return self

    @property
    def host(self) -> str:
        return split_listen(self.listen)[0]

    @property
    def port(self) -> int:
        return split_listen(self.listen)[1]

    def base_url(self, port: int | None = None) -> str:
        if self.public_url is not None:
            return self.public_url.rstrip("/")
        host = self.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port if port is None else port}"
