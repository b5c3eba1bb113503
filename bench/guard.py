"""The result guard's default rules against the corpus in ``tests/guard/corpus``: the
share of known injections and fake secrets caught, the false-positive rate on the
ordinary set (code, logs, web pages, mail, data), and the cost of screening a result of
growing size (a tool result is cut to ``[tools] max_result_chars``, 20,000 by default).

    python bench/guard.py [--sizes 20000 200000] [--samples 5]

Timings are wall-clock milliseconds, best of ``--samples``, in this process; the ratio
column compares each size with the first one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.guard.corpus import fake_secrets, injections, ordinary
from thalos_bot.guard.guard import ResultGuard
from thalos_bot.guard.rules import DEFAULT_RULES, scan


def rates() -> None:
    trip = injections()
    caught = sum(1 for text in trip if scan(text, DEFAULT_RULES))
    secrets = fake_secrets()
    found = sum(1 for rule, (text, _) in secrets.items() if scan(text, DEFAULT_RULES))
    files = ordinary()
    flagged = [p.name for p in files if scan(p.read_text(encoding="utf-8"), DEFAULT_RULES)]
    print(f"injections caught: {caught}/{len(trip)} ({100 * caught / len(trip):.1f}%)")
    print(f"secrets caught:    {found}/{len(secrets)} ({100 * found / len(secrets):.1f}%)")
    rate = 100 * len(flagged) / len(files)
    print(f"false positives:   {len(flagged)}/{len(files)} ordinary results ({rate:.1f}%)")
    for name in flagged:
        print(f"  flagged: {name}")


def timing(sizes: list[int], samples: int) -> None:
    prose = "".join(p.read_text(encoding="utf-8") for p in ordinary())
    guard = ResultGuard()
    print(f"{'chars':>9} {'ms':>8} {'x first':>8}")
    first: float | None = None
    for size in sizes:
        text = (prose * (size // len(prose) + 1))[:size]
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            guard.screen(text, source="bench")
            times.append(time.perf_counter() - start)
        ms = min(times) * 1000
        first = first or ms
        print(f"{size:>9} {ms:>8.2f} {ms / first:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 20_000, 200_000])
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    rates()
    timing(args.sizes, args.samples)


if __name__ == "__main__":
    main()
