"""Reading an OGG/Opus clip without decoding it: how long it plays, and a waveform.

A voice message shows its length and a waveform (Discord and Matrix carry both with the
file). Both come from the Ogg framing alone, so a clip from any engine (the local one,
or a server's ``opus``) gets them without an audio decoder:

- **Duration**: the last page's granule position counts 48 kHz samples, less the
  ``pre-skip`` the ``OpusHead`` header names (RFC 7845).
- **Waveform**: the size of each Opus packet. The encoder spends more bytes on loud,
  busy sound and few on silence, so packet sizes trace the speech's loudness well enough
  for a bar chart of it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OPUS_RATE = 48_000
"""Opus granule positions count samples at 48 kHz, whatever the input rate."""
WAVEFORM_POINTS = 64
"""How many bars a waveform has (Discord takes up to 256 bytes, one per bar)."""


class NotOggOpusError(ValueError):
    """The bytes are not an OGG/Opus stream."""


@dataclass(frozen=True, slots=True)
class OggOpus:
    duration: float
    """Seconds."""
    waveform: tuple[int, ...]
    """Loudness, 0..255, evenly over the clip (at most :data:`WAVEFORM_POINTS`)."""


def read_ogg_opus(data: bytes, points: int = WAVEFORM_POINTS) -> OggOpus:
    """The duration and waveform of an OGG/Opus stream; raises :class:`NotOggOpusError`."""
    packets, granule = _packets(data)
    if len(packets) < 2 or not packets[0].startswith(b"OpusHead") or len(packets[0]) < 19:
        raise NotOggOpusError("no OpusHead header")
    if not packets[1].startswith(b"OpusTags"):
        raise NotOggOpusError("no OpusTags header")
    (pre_skip,) = struct.unpack_from("<H", packets[0], 10)
    duration = max(0, granule - pre_skip) / OPUS_RATE
    return OggOpus(duration, _waveform([len(p) for p in packets[2:]], points))


def _packets(data: bytes) -> tuple[list[bytes], int]:
    """The stream's packets (a packet may span pages), and the last granule position."""
    packets: list[bytes] = []
    current = bytearray()
    granule = 0
    at = 0
    if not data.startswith(b"OggS"):
        raise NotOggOpusError("not an Ogg stream")
    while at < len(data):
        if data[at : at + 4] != b"OggS" or at + 27 > len(data):
            raise NotOggOpusError(f"no Ogg page at byte {at}")
        (position,) = struct.unpack_from("<q", data, at + 6)
        count = data[at + 26]
        table = data[at + 27 : at + 27 + count]
        body = at + 27 + count
        if len(table) < count or body + sum(table) > len(data):
            raise NotOggOpusError(f"the Ogg page at byte {at} is cut short")
        for lacing in table:
            current += data[body : body + lacing]
            body += lacing
            if lacing < 255:
                packets.append(bytes(current))
                current.clear()
        if position >= 0:
            granule = position
        at = body
    return packets, granule


def _waveform(sizes: list[int], points: int) -> tuple[int, ...]:
    if not sizes:
        return ()
    buckets = min(points, len(sizes))
    means = []
    for index in range(buckets):
        part = sizes[index * len(sizes) // buckets : (index + 1) * len(sizes) // buckets]
        means.append(sum(part) / len(part))
    low, high = min(means), max(means)
    if high == low:
        return tuple(128 for _ in means)
    return tuple(round(255 * (mean - low) / (high - low)) for mean in means)
