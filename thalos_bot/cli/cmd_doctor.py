"""``thalos-bot doctor``: one line per check, ✓ or ✗; exit 1 when any fails."""

from __future__ import annotations

import argparse

import anyio

from thalos_bot.service.doctor import run_doctor


def run(args: argparse.Namespace) -> int:
    checks = anyio.run(lambda: run_doctor(args.config, offline=args.offline))
    for check in checks:
        print(check.line())
    failed = [c for c in checks if c.outcome == "fail"]
    print(f"\n{len(failed)} problem(s) found." if failed else "\nAll checks passed.")
    return 1 if failed else 0
