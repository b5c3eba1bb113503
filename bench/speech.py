"""Speaking an answer with the local engine (espeak-ng, then ffmpeg to OGG/Opus).

    python bench/speech.py [--runs 7] [--voice en-us]

Printed, each the median of ``--runs`` runs after one warm-up:

* time to first audio for a 300-character Markdown answer: from the answer's text to
  the first clip's OGG/Opus bytes (spoken text, clips, espeak-ng, ffmpeg), against the
  target of at most 1.5 s on 2 cores;
* that time split into espeak-ng's part and ffmpeg's part;
* the real-time factor: seconds spent synthesizing over seconds of audio made (below 1
  is faster than it is spoken), for the 300-character answer and a 3,000-character one
  read clip by clip.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import anyio

from thalos_bot.config.speech import LocalSpeechSettings
from thalos_bot.speech.local import ESPEAK, LocalSpeaker
from thalos_bot.speech.spoken import clips, spoken_text
from thalos_bot.speech.wav import read_wav

ANSWER = (
    "Rain is likely this afternoon, so take an umbrella if you go out after two. "
    "The **wind** picks up in the evening, gusting to forty kilometres an hour near "
    "the coast. Tomorrow is dry and bright, with a high of eighteen degrees. "
    "See [the forecast](https://example.com/f) for the hourly details, or ask me again."
)
TARGET = 1.5
CLIP = 1000


async def _first_audio(speaker: LocalSpeaker, answer: str) -> tuple[float, float]:
    """Seconds to the first clip's audio, and that clip's length in seconds."""
    started = time.perf_counter()
    first = clips(spoken_text(answer), CLIP)[0]
    audio = await speaker.speak(first)
    return time.perf_counter() - started, audio.duration or 0.0


async def _espeak_only(settings: LocalSpeechSettings, text: str) -> float:
    started = time.perf_counter()
    command = [ESPEAK, "--stdin", "--stdout", "-v", settings.voice]
    command += ["-s", str(settings.words_per_minute)]
    done = await anyio.run_process(command, input=text.encode())
    read_wav(done.stdout)
    return time.perf_counter() - started


async def _whole(speaker: LocalSpeaker, answer: str) -> tuple[float, float]:
    """Seconds to speak every clip, and the seconds of audio made."""
    started = time.perf_counter()
    audio_seconds = 0.0
    for clip in clips(spoken_text(answer), CLIP):
        audio = await speaker.speak(clip)
        audio_seconds += audio.duration or 0.0
    return time.perf_counter() - started, audio_seconds


async def main(runs: int, voice: str) -> None:
    settings = LocalSpeechSettings(voice=voice)
    speaker = LocalSpeaker(settings)
    text = spoken_text(ANSWER)
    long_answer = " ".join([ANSWER] * 10)
    await _first_audio(speaker, ANSWER)  # warm-up: page cache, voice data
    first = [await _first_audio(speaker, ANSWER) for _ in range(runs)]
    espeak = [await _espeak_only(settings, text) for _ in range(runs)]
    whole = [await _whole(speaker, long_answer) for _ in range(max(1, runs // 2))]
    ttfa = statistics.median(t for t, _ in first)
    audio = statistics.median(d for _, d in first)
    espeak_s = statistics.median(espeak)
    long_t = statistics.median(t for t, _ in whole)
    long_audio = statistics.median(d for _, d in whole)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"local engine: espeak-ng voice {voice}, ffmpeg libopus; {cores} cores; {runs} runs")
    print(f"answer: {len(ANSWER)} characters of Markdown, {len(text)} spoken")
    verdict = "ok" if ttfa <= TARGET else "OVER TARGET"
    print(
        f"time to first audio: {ttfa * 1000:.0f} ms (target <= {TARGET * 1000:.0f} ms: {verdict})"
    )
    print(
        f"  espeak-ng: {espeak_s * 1000:.0f} ms, "
        f"ffmpeg and the rest: {(ttfa - espeak_s) * 1000:.0f} ms"
    )
    print(f"audio made: {audio:.1f} s; real-time factor {ttfa / audio:.3f}")
    clips_long = len(clips(spoken_text(long_answer), CLIP))
    print(
        f"a {len(long_answer)}-character answer in {clips_long} clips: {long_t * 1000:.0f} ms "
        f"for {long_audio:.1f} s of audio; real-time factor {long_t / long_audio:.3f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--voice", default="en-us")
    args = parser.parse_args()
    anyio.run(main, args.runs, args.voice)
