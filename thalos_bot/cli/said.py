"""A command that does one thing and says how it went: its sentence on stdout (exit 0),
or on stderr (exit 1)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig

Act = Callable[["LoadedConfig", argparse.Namespace], Awaitable[tuple[str, bool]]]


def said(args: argparse.Namespace, act: Act) -> int:
    """Run ``act`` over the configuration ``args`` name; print what it said."""
    import anyio

    from thalos_bot.config.loader import load_settings

    loaded = load_settings(args.config)
    text, ok = anyio.run(act, loaded, args)
    print(text, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1
