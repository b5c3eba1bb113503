"""``thalos-bot doctor``: one line per check, ✓ or ✗; exit 1 when any fails."""

from __future__ import annotations

import argparse

import anyio

from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.service.doctor import run_doctor
from thalos_bot.service.doctor_fix import mend


def _fix(args: argparse.Namespace) -> None:
    """``--fix``: the safe repairs first, listed, then the checks as usual."""
    try:
        loaded = load_settings(args.config)
    except ConfigError:
        print("--fix: nothing mended while the configuration is invalid (see below).\n")
        return
    try:
        changes = mend(loaded)
    except OSError as exc:
        print(f"--fix: stopped: {exc.filename or loaded.state_dir}: {exc.strerror or exc}\n")
        return
    if not changes:
        print("--fix: nothing needed mending.\n")
        return
    print("--fix changed:")
    print("\n".join(f"  {change}" for change in changes))
    print()


def run_security(args: argparse.Namespace) -> int:
    """``--security``: the exposure lines, then a score; exit 1 when any is a ✗."""
    from thalos_bot.service.doctor_security import security_checks

    checks = security_checks(args.config)
    for check in checks:
        print("\n".join(check.lines()))
    failed = sum(1 for c in checks if c.outcome == "fail")
    scored = [c for c in checks if c.outcome != "skip"]
    passed = sum(1 for c in scored if c.outcome == "ok")
    print(f"\nExposure: {passed} of {len(scored)} checks pass", end="")
    print(f"; {failed} to fix (each ✗ says how)." if failed else "; nothing to fix.")
    return 1 if failed else 0


def run(args: argparse.Namespace) -> int:
    if getattr(args, "security", False):
        if args.fix:
            _fix(args)
        return run_security(args)
    if args.fix:
        _fix(args)
    checks = anyio.run(lambda: run_doctor(args.config, offline=args.offline))
    for check in checks:
        print("\n".join(check.lines()))
    failed = sum(1 for c in checks if c.outcome == "fail")
    warned = sum(1 for c in checks if c.outcome == "warn")
    warnings = f"{warned} warning{'' if warned == 1 else 's'}" if warned else ""
    if failed:
        summary = f"{failed} problem{'' if failed == 1 else 's'} found"
        print(f"\n{summary}{f', {warnings}' if warnings else ''}.")
    else:
        print(f"\nAll checks passed{f' ({warnings})' if warnings else ''}.")
    return 1 if failed else 0
