"""How long file intake stalls the event loop, and what it costs.

    python bench/intake_stall.py [--tree DIR] [--repeat 3] [--log-mb 20] [--album 10]
                                 [--pdf-pages 8000] [--no-settle] [--fake-in-process]

The daemon's host (SQLite, runtime, pump, the real python-telegram-bot) runs against the
Telegram fake with the scripted provider, so what is measured is intake and the
runtime's media handling, not a model's request body. The fake runs in a process of its
own, as Telegram is not in the daemon's (``--fake-in-process`` to compare), and makes
the files there; ``thalos-bot run`` freezes its start-up heap before the first message,
and so does the bench (``--no-settle`` to skip it). A ticker task on the daemon's
event loop sleeps 5 ms at a time and records how much later than asked it woke: the
longest such gap is the longest stall every other chat would have felt (the ``idle``
case, a daemon with nothing to do, shows what the machine alone adds). Each case runs
in a fresh process and daemon, from the moment the file is sent until the turn reaches
the model or the notice is sent. Printed per case, over ``--repeat`` runs: the longest
stall (median, and the worst run's), the time until handled (median), and the
process's peak memory (maximum resident set) above what it held before the file was
sent (the largest).

Cases: idle; an album of ``--album`` text files of ``--log-mb`` MB (a log); one such file; a
PDF of ``--pdf-pages`` pages whose cross-reference table is missing (pypdf rebuilds
it, then counts the pages: refused as too long); a 7999 x 8000 px RGB PNG of one
colour (200 KB; refused before decoding since this round, scaled before).

``--tree`` runs another checkout's code (e.g. ``--tree /work/main`` for the figures
before a change): its ``thalos_bot``, Telegram plug-in and test fakes.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import secrets
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from multiprocessing.managers import BaseManager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHAT = 4242
TICK = 0.005
CASES = ("idle", "album", "log", "pdf", "png")
IDLE_FOR = 3.0


def _log(megabytes: int, serial: int) -> bytes:
    line = "2026-12-01T12:00:00Z INFO request served path=/api/v1/items status=200 ms=12\n"
    body = f"log {serial}\n" + line * (megabytes * 1_000_000 // len(line))
    return body.encode()


def _broken_pdf(pages: int) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=72, height=72)
    out = io.BytesIO()
    writer.write(out)
    return re.sub(rb"\nxref\n.*?trailer", b"\ntrailer", out.getvalue(), flags=re.DOTALL)


def _flat_png(width: int, height: int) -> bytes:
    """An RGB PNG of one colour, written row by row (tiny; 3 bytes a pixel decoded)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        return struct.pack(">I", len(body)) + kind + body + crc

    packer = zlib.compressobj(9)
    row = b"\x00" + b"\x30\x60\x90" * width
    rows, left = divmod(height, 256)
    parts = [packer.compress(row * 256) for _ in range(rows)]
    data = b"".join([*parts, packer.compress(row * left), packer.flush()])
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


def _files(case: str, args: argparse.Namespace) -> list[tuple[bytes, str, str]]:
    if case == "idle":
        return []
    if case == "album":
        return [(_log(args.log_mb, n), f"app-{n}.log", "text/plain") for n in range(args.album)]
    if case == "log":
        return [(_log(args.log_mb, 0), "app.log", "text/plain")]
    if case == "pdf":
        return [(_broken_pdf(args.pdf_pages), "broken.pdf", "application/pdf")]
    return [(_flat_png(7999, 8000), "huge.png", "image/png")]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Ticker:
    def __init__(self) -> None:
        self.worst = 0.0

    async def run(self) -> None:
        import anyio

        while True:
            before = time.perf_counter()
            await anyio.sleep(TICK)
            self.worst = max(self.worst, time.perf_counter() - before - TICK)


class FakeWorld:
    """The Telegram fake, in this process or in a process of its own (like Telegram, its
    work then never competes with the daemon for this interpreter's GIL). Every call is
    blocking: the daemon's loop makes them from a worker thread."""

    def __init__(self, token: str) -> None:
        from tests.fakes.telegram_api import TelegramFake

        self._fake = TelegramFake(token)
        self._fake.start()
        self._files: list[tuple[bytes, str, str]] = []

    def base_url(self) -> str:
        url: str = self._fake.base_url
        return url

    def wait_polling(self) -> None:
        self._fake.wait_for_blocking(lambda: self._fake.polling, 10)

    def prepare(self, case: str, log_mb: int, album: int, pdf_pages: int) -> int:
        """Make the case's files here (where the fake runs); returns their bytes."""
        self._files = _files(
            case, argparse.Namespace(log_mb=log_mb, album=album, pdf_pages=pdf_pages)
        )
        return sum(len(data) for data, _, _ in self._files)

    def push(self) -> None:
        album = "album-1" if len(self._files) > 1 else None
        for data, name, mime in self._files:
            self._fake.push_document(
                CHAT, CHAT, data, file_name=name, mime_type=mime, media_group_id=album
            )

    def wait_texts(self, timeout: float) -> list[str]:
        texts: list[str] = self._fake.wait_for_blocking(lambda: self._fake.texts(CHAT), timeout)
        return texts

    def texts(self) -> list[str]:
        texts: list[str] = self._fake.texts(CHAT)
        return texts

    def stop(self) -> None:
        self._fake.stop()


class _Worlds(BaseManager):
    pass


_Worlds.register("FakeWorld", FakeWorld)


async def _one_case(case: str, args: argparse.Namespace) -> dict[str, Any]:
    if not args.fake_in_process:
        with _Worlds() as worlds:
            return await _run_case(case, args, worlds.FakeWorld(args.token))  # type: ignore[attr-defined]
    world = FakeWorld(args.token)
    try:
        return await _run_case(case, args, world)
    finally:
        world.stop()


async def _run_case(case: str, args: argparse.Namespace, fake: FakeWorld) -> dict[str, Any]:
    import anyio
    from anyio.to_thread import run_sync

    from thalos_bot.config.loader import LoadedConfig
    from thalos_bot.config.models import Settings
    from thalos_bot.providers.scripted import Await, Say, ScriptedProvider
    from thalos_bot.service.host import open_host

    try:
        from thalos_bot.service.heap import settle_heap
    except ImportError:  # an older checkout: its daemon did not settle the heap

        def settle_heap() -> int:
            return 0

    size = fake.prepare(case, args.log_mb, args.album, args.pdf_pages)
    with tempfile.TemporaryDirectory() as state:
        settings = Settings.model_validate(
            {
                "provider": {"kind": "scripted"},
                "logging": {"level": "error"},
                "channels": {
                    "console": {"enabled": False},
                    "telegram": {
                        "enabled": True,
                        "allowed_user_ids": [CHAT],
                        "base_url": fake.base_url(),
                        "poll_timeout": 10,
                        "streaming": "off",
                        "album_settle": 0.2,
                    },
                },
            }
        )
        loaded = LoadedConfig(settings, None, Path(state))
        async with open_host(loaded) as host, anyio.create_task_group() as group:
            provider = host.provider
            assert isinstance(provider, ScriptedProvider)
            group.start_soon(host.pump.run, host.sources)
            await run_sync(fake.wait_polling)
            if args.settle:
                settle_heap()  # as `thalos-bot run` does before the first message
            reached = anyio.Event()

            async def at_model() -> None:
                reached.set()

            provider.push([Await(at_model), Say("ok")])
            ticker = Ticker()
            baseline = _peak_mb()
            group.start_soon(ticker.run)
            started = time.perf_counter()
            await run_sync(fake.push)  # as a phone would: not the loop's work
            if not size:  # the baseline: what the machine alone costs the ticker
                await anyio.sleep(IDLE_FOR)
                took, worst = time.perf_counter() - started, ticker.worst
                host.pump.stop()
                group.cancel_scope.cancel()
                return _result(case, worst=worst, took=took, baseline=baseline, outcome="-", size=0)
            handled = anyio.Event()
            ended: list[tuple[float, float, str]] = []  # when, the worst stall, how

            def end(how: str) -> None:
                if not ended:
                    ended.append((time.perf_counter() - started, ticker.worst, how))
                handled.set()

            async def model() -> None:
                await reached.wait()
                end("to the model")

            async def notice() -> None:
                await run_sync(fake.wait_texts, 600)  # returns once the answer is shown too
                end("notice")

            group.start_soon(model)
            group.start_soon(notice)
            await handled.wait()
            took, worst, outcome = ended[0]
            await run_sync(fake.wait_texts, 60)  # the answer, before stopping
            host.pump.stop()
            group.cancel_scope.cancel()
    return _result(case, worst=worst, took=took, baseline=baseline, outcome=outcome, size=size)


def _result(
    case: str, *, worst: float, took: float, baseline: float, outcome: str, size: int
) -> dict[str, Any]:
    return {
        "case": case,
        "stall_ms": worst * 1000,
        "took_s": took,
        "peak_mb": max(0.0, _peak_mb() - baseline),
        "outcome": outcome,
        "bytes": size,
    }


def _describe(case: str, args: argparse.Namespace) -> str:
    return {
        "idle": f"idle daemon, {IDLE_FOR:g} s (the machine)",
        "album": f"album of {args.album} x {args.log_mb} MB log",
        "log": f"one {args.log_mb} MB log",
        "pdf": f"PDF, {args.pdf_pages} pages, no xref",
        "png": "PNG 7999x8000 RGB, one colour",
    }[case]


def _child(args: argparse.Namespace) -> None:
    import anyio

    from thalos_bot.telemetry.logging import configure_logging

    configure_logging("error", "pretty", sys.stderr)
    result = anyio.run(_one_case, args.case, args)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code runs")
    parser.add_argument("--log-mb", type=int, default=20)
    parser.add_argument("--album", type=int, default=10)
    parser.add_argument("--pdf-pages", type=int, default=8000)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (3)")
    parser.add_argument(
        "--no-settle",
        dest="settle",
        action="store_false",
        help="skip the heap freeze `thalos-bot run` does after start-up",
    )
    parser.add_argument(
        "--fake-in-process",
        action="store_true",
        help="run the Telegram fake in the daemon's process (its work then competes for the GIL)",
    )
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--token", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    # Keep this folder off the import path (bench/telegram.py would shadow the
    # python-telegram-bot package), and put the tree's code first.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree), str(tree / "channels" / "telegram")]
    if args.case:
        os.environ.setdefault("PTB_TIMEDELTA", "true")
        os.environ["TELEGRAM_BOT_TOKEN"] = args.token
        _child(args)
        return
    print(
        f"code: {tree}; ticker every {TICK * 1000:.0f} ms; one fresh process per run, "
        f"{args.repeat} runs per case (median, and the worst run)"
    )
    header = f"{'case':<34} {'longest stall':>22} {'handled in':>11} {'peak +RSS':>10}  outcome"
    print(header)
    print("-" * len(header))
    for case in args.cases:
        runs = [_run_child(case, tree, args) for _ in range(args.repeat)]
        done = [r for r in runs if isinstance(r, dict)]
        if not done:
            print(f"{_describe(case, args):<34} failed: {runs[-1]}")
            continue
        stalls = [r["stall_ms"] for r in done]
        took = statistics.median(r["took_s"] for r in done)
        peak = max(r["peak_mb"] for r in done)
        stall = f"{statistics.median(stalls):.1f} ms (worst {max(stalls):.0f})"
        print(
            f"{_describe(case, args):<34} {stall:>22} {took:>9.2f} s {peak:>7.0f} MB  "
            f"{done[-1]['outcome']}"
        )


def _run_child(case: str, tree: Path, args: argparse.Namespace) -> dict[str, Any] | str:
    token = "123456:BENCH-" + secrets.token_hex(16)
    command = [sys.executable, __file__, "--case", case, "--tree", str(tree), "--token", token]
    command += ["--log-mb", str(args.log_mb), "--album", str(args.album)]
    command += ["--pdf-pages", str(args.pdf_pages)]
    command += [] if args.settle else ["--no-settle"]
    command += ["--fake-in-process"] if args.fake_in_process else []
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return done.stderr.strip()[-400:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    main()
