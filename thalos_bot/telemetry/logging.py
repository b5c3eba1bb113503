"""structlog set-up: pretty in a terminal, JSON lines otherwise; secrets scrubbed.

Everything, including third-party stdlib loggers (httpx, python-telegram-bot, mcp), goes
through one pipeline whose last processors redact secrets and render.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

from thalos_bot.telemetry.redact import RedactingFilter, redact_processor

LogFormat = Literal["auto", "json", "pretty"]

# Libraries that log full request URLs (the Telegram token is in the URL) or chatter.
NOISY_LOGGERS = {
    "httpx": logging.WARNING,
    "httpx2": logging.WARNING,
    "httpcore": logging.WARNING,
    "httpcore2": logging.WARNING,
    "telegram": logging.WARNING,
    "telegram.ext": logging.WARNING,
    "discord": logging.WARNING,
    "anthropic": logging.WARNING,
    "mcp": logging.WARNING,
    "aiosqlite": logging.WARNING,
}


def configure_logging(
    level: str = "info", fmt: LogFormat = "auto", stream: TextIO | None = None
) -> None:
    stream = stream if stream is not None else sys.stderr
    json_lines = fmt == "json" or (fmt == "auto" and not stream.isatty())
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        redact_processor,
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=stream.isatty())
    )
    numeric = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared[:-2],
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared[:-2],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            redact_processor,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for name, floor in NOISY_LOGGERS.items():
        logging.getLogger(name).setLevel(max(floor, numeric))
