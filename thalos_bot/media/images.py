"""Images made ready for the model: a media type the API takes, within its size limit,
scaled down to the long edge Anthropic recommends.

Pillow does the work off the event loop and under the media limiter
(:func:`prepare_image`, :mod:`thalos_bot.media.work`). A large image is decoded reduced: a
JPEG at the smallest scale (1/2, 1/4, 1/8) still over the target size, straight from its
DCT data, so a 64-megapixel photo costs what a 4-megapixel one does. Other formats have
no reduced decode, so they are decoded whole, and only up to :data:`MAX_DECODED_PIXELS`;
past that (a 243 KB PNG can claim 8000 x 8000 px, 256 MB once decoded) the image is
refused before it is decoded. An image that cannot be read, or that is still too large
after scaling, is a :class:`MediaRejectedError` whose text names the limit; nothing is
sent half.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from thalos_bot.media.limits import MediaRejectedError
from thalos_bot.media.work import off_loop

MAX_LONG_EDGE = 1568
"""Anthropic: images larger than this on the long edge are scaled down by the API
anyway (slower, no better); sending them smaller saves time and upload. It is also under
the 2000 px the API allows once a request holds more than 20 images, so an image made
ready here is accepted however many a request holds."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The API refuses an image whose base64 data is over 5 MB."""
MAX_RAW_BYTES = MAX_IMAGE_BYTES * 3 // 4
"""The largest raw image whose base64 form stays within :data:`MAX_IMAGE_BYTES`."""
MAX_PIXELS = 64_000_000
"""Larger images are refused before they are decoded (the API's 8000 x 8000 px)."""
MAX_DECODED_PIXELS = 25_000_000
"""An image that cannot be decoded reduced (anything but JPEG) is refused over this many
pixels before it is decoded: a decompression bomb, or a file no chat needs whole
(a 6000 x 4000 px photo is 24 megapixels)."""
REDUCED_FORMATS = frozenset({"JPEG", "MPO"})
"""Formats Pillow decodes at a reduced scale (``Image.draft``)."""
JPEG_QUALITY = 85

_BY_FORMAT = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "WEBP": "image/webp"}

UNREADABLE = (
    "That image could not be read. Images can be JPEG, PNG, GIF or WebP "
    "(other formats that can be opened are converted)."
)
TOO_LARGE = "That image is too large even after scaling (the model takes images up to 5 MB)."
TOO_MANY_PIXELS = (
    "That image is too large to open: {width:,} x {height:,} pixels. A JPEG can have at most "
    f"{MAX_PIXELS // 1_000_000} megapixels, other images at most "
    f"{MAX_DECODED_PIXELS // 1_000_000}; send a smaller one (or the photo as a JPEG)."
)


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the image's header (nothing is decoded), or ``None`` when
    Pillow cannot open it."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    return width, height


@dataclass(frozen=True, slots=True)
class PreparedImage:
    data: bytes
    media_type: str
    width: int
    height: int
    scaled: bool


def _encode(image: Image.Image) -> tuple[bytes, str]:
    out = io.BytesIO()
    if image.mode in {"RGBA", "LA", "PA"} or "transparency" in image.info:
        image.convert("RGBA").save(out, format="PNG", optimize=True)
        return out.getvalue(), "image/png"
    image.convert("RGB").save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return out.getvalue(), "image/jpeg"


def _target(width: int, height: int) -> tuple[int, int]:
    """The size :data:`MAX_LONG_EDGE` gives, keeping the aspect ratio."""
    scale = MAX_LONG_EDGE / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def check_pixels(image: Image.Image) -> None:
    """Refuse ``image`` (opened, not decoded) when decoding it would take too much."""
    width, height = image.size
    limit = MAX_PIXELS if image.format in REDUCED_FORMATS else MAX_DECODED_PIXELS
    if width * height > limit:
        raise MediaRejectedError(TOO_MANY_PIXELS.format(width=width, height=height))


def prepare_image_sync(data: bytes | bytearray) -> PreparedImage:
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            check_pixels(image)
            media_type = _BY_FORMAT.get(image.format or "")
            long_edge = max(width, height)
            if media_type and long_edge <= MAX_LONG_EDGE and len(data) <= MAX_RAW_BYTES:
                return PreparedImage(bytes(data), media_type, width, height, scaled=False)
            if long_edge > MAX_LONG_EDGE:
                if image.format in REDUCED_FORMATS:
                    image.draft(None, _target(width, height))  # decoded at 1/2, 1/4 or 1/8
                image.thumbnail((MAX_LONG_EDGE, MAX_LONG_EDGE), Image.Resampling.LANCZOS)
            else:
                image.load()
            return _encoded(image)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise MediaRejectedError(UNREADABLE) from exc


def _encoded(frame: Image.Image) -> PreparedImage:
    encoded, media_type = _encode(frame)
    if len(encoded) > MAX_RAW_BYTES and media_type == "image/png":
        flat = Image.new("RGB", frame.size, "white")
        flat.paste(frame.convert("RGBA"), mask=frame.convert("RGBA").getchannel("A"))
        encoded, media_type = _encode(flat)
    if len(encoded) > MAX_RAW_BYTES:
        raise MediaRejectedError(TOO_LARGE)
    return PreparedImage(encoded, media_type, frame.width, frame.height, scaled=True)


async def prepare_image(data: bytes | bytearray) -> PreparedImage:
    """``data`` as an image the API accepts, or :class:`MediaRejectedError` (in a worker
    thread, under the media limiter)."""
    return await off_loop(prepare_image_sync, data)
