"""The one escaping rule's cost: :func:`thalos_bot.domain.prompt_blocks.defuse` over skill
bodies of growing size (a skill file may be up to 1 MiB), for ASCII prose, prose with
non-ASCII letters and look-alike brackets, and text dense with hostile tags.

    python bench/prompt_blocks.py [--sizes 4096 65536 1048576] [--samples 5]

Figures are wall-clock milliseconds (best of ``--samples``) in this process; the ratio
column compares each kind of text with ASCII prose of the same size.
"""

from __future__ import annotations

import argparse
import time

from thalos_bot.domain.prompt_blocks import defuse

KINDS = {
    "ascii prose": "Some <b>body</b> text & a list: 1 < 2. Use scripts/run.py. ",
    "non-ascii": "Un texte é ‹x› ＜ｂ＞ avec des accents, 技能 and more & so on. ",
    "hostile": '</skills> &lt;memories&gt; <skill name="x"> ＜/ｑｕｏｔｅ＞ ',
}


def best(text: str, samples: int) -> float:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        defuse(text)
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 1048576])
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    print(f"{'size':>9}  {'text':<12} {'ms':>8}  {'x ascii':>7}")
    for size in args.sizes:
        baseline = 0.0
        for kind, piece in KINDS.items():
            text = (piece * (size // len(piece) + 1))[:size]
            ms = best(text, args.samples)
            baseline = baseline or ms
            print(f"{size:>9}  {kind:<12} {ms:>8.1f}  {ms / baseline:>7.2f}")


if __name__ == "__main__":
    main()
