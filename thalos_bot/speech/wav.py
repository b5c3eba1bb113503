"""Reading a WAV header: enough to know how long the sound is.

A WAV written to a pipe (``espeak-ng --stdout``) cannot go back to fill in its sizes,
so its ``data`` chunk claims about 2 GB; the bytes that actually follow count instead.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass


class NotWavError(ValueError):
    """The bytes are not a PCM WAV file."""


@dataclass(frozen=True, slots=True)
class WavInfo:
    channels: int
    sample_rate: int
    bits_per_sample: int
    data_bytes: int

    @property
    def byte_rate(self) -> int:
        return self.sample_rate * self.channels * self.bits_per_sample // 8

    @property
    def duration(self) -> float:
        """Seconds of sound."""
        return self.data_bytes / self.byte_rate if self.byte_rate else 0.0


def read_wav(data: bytes) -> WavInfo:
    """The format and length of a RIFF/WAVE file; raises :class:`NotWavError`."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise NotWavError("not a RIFF/WAVE file")
    at = 12
    fmt: tuple[int, int, int] | None = None
    while at + 8 <= len(data):
        chunk_id = data[at : at + 4]
        (size,) = struct.unpack_from("<I", data, at + 4)
        body = at + 8
        if chunk_id == b"fmt ":
            if size < 16 or body + 16 > len(data):
                raise NotWavError("the fmt chunk is too short")
            _tag, channels, rate, _byte_rate, _align, bits = struct.unpack_from(
                "<HHIIHH", data, body
            )
            if channels < 1 or rate < 1 or bits < 1:
                raise NotWavError("the fmt chunk names no channels, rate or sample size")
            fmt = (channels, rate, bits)
        elif chunk_id == b"data":
            if fmt is None:
                raise NotWavError("the data chunk comes before the fmt chunk")
            available = len(data) - body
            return WavInfo(*fmt, data_bytes=min(size, available))
        at = body + size + (size & 1)
    raise NotWavError("no data chunk")


def wav_bytes(pcm: bytes, *, sample_rate: int = 16000, channels: int = 1, bits: int = 16) -> bytes:
    """``pcm`` (little-endian samples) wrapped in a WAV header."""
    byte_rate = sample_rate * channels * bits // 8
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + len(pcm),
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        sample_rate,
        byte_rate,
        channels * bits // 8,
        bits,
        b"data",
        len(pcm),
    )
    return header + pcm
