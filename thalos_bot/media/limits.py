"""What may be sent, and the one error that says why something was not.

The Messages API's media limits, as documented for models with a 200k-token context
window (the stricter ones; larger windows allow more), apply to a whole request:

* an image is at most 8000 x 8000 px, and at most 2000 x 2000 px once a request holds
  more than 20 images; images and documents together are at most 100 blocks;
* the PDFs of a request have at most 100 pages together, and PDF pages plus images are
  at most 100;
* the request body is at most 32 MB (an image's base64 data at most 5 MB, see
  :mod:`thalos_bot.media.images`).
"""

from __future__ import annotations

TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""Bots can download files of up to 20 MB (Bot API, getFile)."""
MAX_REQUEST_BYTES = 32_000_000
"""The API refuses a request body over 32 MB (``413 request_too_large``); read as
decimal megabytes, the stricter reading."""
MAX_PDF_BYTES = 22_000_000
"""A PDF whose base64 form (4/3 of it, 29.3 MB) leaves room in a 32 MB request for the
conversation around it."""
MAX_PDF_PAGES = 100
"""Pages of PDF in one request (and so in one PDF)."""
MAX_MEDIA = 100
"""Image and document blocks in one request; also PDF pages plus images."""
MAX_IMAGE_SIDE = 8000
MANY_IMAGES = 20
"""More images than this in one request lower the side limit to
:data:`MAX_MANY_IMAGES_SIDE`."""
MAX_MANY_IMAGES_SIDE = 2000


class MediaRejectedError(Exception):
    """Something a person sent that cannot go to the model; ``notice`` says why, naming
    the limit, in words fit for the chat."""

    def __init__(self, notice: str) -> None:
        super().__init__(notice)
        self.notice = notice
