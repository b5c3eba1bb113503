"""The local engine: ``espeak-ng`` (Debian's package) speaks WAV to a pipe, ``ffmpeg``
encodes it to OGG/Opus, the format of a voice message. No network, no key, no file on
disk: both run as subprocesses fed and read through pipes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import anyio
import structlog

from thalos_bot.config.speech import LocalSpeechSettings
from thalos_bot.speech.base import Audio, SpeechError
from thalos_bot.speech.wav import NotWavError, read_wav

log = structlog.get_logger(__name__)

ESPEAK = "espeak-ng"
FFMPEG = "ffmpeg"
PACKAGES = {ESPEAK: "espeak-ng", FFMPEG: "ffmpeg"}
"""Each binary the engine runs, and the Debian package that brings it."""
OGG_OPUS = "audio/ogg"
TIMEOUT = 60.0
"""Seconds one clip may take (espeak-ng and ffmpeg together take well under one)."""
OPUS_BITRATE = "32k"
"""Plenty for a single synthetic voice (Telegram's own voice notes are about 30 kb/s)."""

NOTHING_TO_SAY = "There was nothing to read aloud."
FAILED = "The voice answer could not be made ({program} failed)."
TOO_SLOW = "The voice answer took too long to make."


def install_line(missing: list[str]) -> str:
    """The command that installs the packages of the ``missing`` binaries."""
    packages = " ".join(dict.fromkeys(PACKAGES[name] for name in missing))
    return f"apt-get install -y --no-install-recommends {packages}"


def missing_programs(which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """The binaries of the local engine not found on PATH (``[]``: it can run)."""
    return [name for name in PACKAGES if which(name) is None]


class LocalSpeaker:
    """:class:`~thalos_bot.speech.base.Speaker` on espeak-ng and ffmpeg."""

    def __init__(self, settings: LocalSpeechSettings, *, timeout: float = TIMEOUT) -> None:
        self.settings = settings
        self.timeout = timeout

    @property
    def name(self) -> str:
        return f"{ESPEAK} {self.settings.voice}"

    @property
    def model(self) -> str | None:
        return None

    async def speak(self, text: str) -> Audio:
        if not text.strip():
            raise SpeechError(NOTHING_TO_SAY)
        missing = missing_programs()
        if missing:
            log.warning("speech_programs_missing", missing=missing, fix=install_line(missing))
            raise SpeechError(
                f"The voice answer needs {' and '.join(missing)}, which this machine lacks "
                f"(install with: {install_line(missing)})."
            )
        try:
            with anyio.fail_after(self.timeout):
                wav = await self._run(
                    ESPEAK,
                    [
                        ESPEAK,
                        "--stdin",
                        "--stdout",
                        "-v",
                        self.settings.voice,
                        "-s",
                        str(self.settings.words_per_minute),
                    ],
                    text.encode("utf-8"),
                )
                try:
                    info = read_wav(wav)
                except NotWavError as exc:
                    log.warning("speech_not_wav", program=ESPEAK, problem=str(exc))
                    raise SpeechError(FAILED.format(program=ESPEAK)) from exc
                ogg = await self._run(FFMPEG, _ffmpeg_command(), wav)
        except TimeoutError as exc:
            log.warning("speech_too_slow", timeout=self.timeout)
            raise SpeechError(TOO_SLOW) from exc
        return Audio(ogg, OGG_OPUS, info.duration, len(text))

    async def _run(self, program: str, command: list[str], data: bytes) -> bytes:
        try:
            done = await anyio.run_process(command, input=data, check=False)
        except OSError as exc:
            log.warning("speech_program_failed", program=program, error=type(exc).__name__)
            raise SpeechError(FAILED.format(program=program)) from exc
        if done.returncode != 0 or not done.stdout:
            log.warning(
                "speech_program_failed",
                program=program,
                returncode=done.returncode,
                stderr=_tail(done.stderr),
            )
            raise SpeechError(FAILED.format(program=program))
        return done.stdout


def _ffmpeg_command() -> list[str]:
    return [
        FFMPEG,
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-f",
        "wav",
        "-i",
        "pipe:0",
        "-ac",
        "1",
        "-ar",
        "48000",
        "-c:a",
        "libopus",
        "-b:a",
        OPUS_BITRATE,
        "-application",
        "voip",
        "-f",
        "ogg",
        "pipe:1",
    ]


def _tail(stderr: bytes) -> str:
    return stderr.decode("utf-8", "replace").strip()[-300:]


__all__ = ["PACKAGES", "LocalSpeaker", "install_line", "missing_programs"]
