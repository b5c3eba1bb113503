"""What may be sent, and the one error that says why something was not."""

from __future__ import annotations

TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""Bots can download files of up to 20 MB (Bot API, getFile)."""
MAX_PDF_BYTES = 24 * 1024 * 1024
"""A PDF whose base64 form stays within the API's 32 MB request limit."""


class MediaRejectedError(Exception):
    """Something a person sent that cannot go to the model; ``notice`` says why, naming
    the limit, in words fit for the chat."""

    def __init__(self, notice: str) -> None:
        super().__init__(notice)
        self.notice = notice
