"""``thalos-bot doctor``: one line per check, ✓ or ✗; exit 1 when any fails."""

from __future__ import annotations

import argparse

import anyio

from thalos_bot.service.doctor import run_doctor


def run(args: argparse.Namespace) -> int:
    checks = anyio.run(lambda: run_doctor(args.config, offline=args.offline))
    for check in checks:
        print(check.line())
    failed = sum(1 for c in checks if c.outcome == "fail")
    warned = sum(1 for c in checks if c.outcome == "warn")
    warnings = f"{warned} warning{'' if warned == 1 else 's'}" if warned else ""
    if failed:
        summary = f"{failed} problem{'' if failed == 1 else 's'} found"
        print(f"\n{summary}{f', {warnings}' if warnings else ''}.")
    else:
        print(f"\nAll checks passed{f' ({warnings})' if warnings else ''}.")
    return 1 if failed else 0
