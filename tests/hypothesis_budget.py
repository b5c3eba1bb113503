"""How many examples the property tests draw: one hypothesis profile for the whole run.

``default`` draws what each test names; ``ci`` (chosen when ``CI`` is set) a quarter of
it, at least ten, so CI's run stays short; ``long`` ten times as many, for a deliberate
long run (``HYPOTHESIS_PROFILE=long``; bench/ has longer runs of its own). A test writes
``max_examples=examples(n)`` with ``n`` its count under the default profile.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILES = {"default": 100, "ci": 25, "long": 1000}
"""Each profile's ``max_examples``; a test's own count is scaled by it over 100."""
FLOOR = 10


def load_profile(environ: dict[str, str] | None = None) -> str:
    """Register the profiles and load the one ``HYPOTHESIS_PROFILE`` names, else ``ci``
    when ``CI`` is set, else ``default``. Returns its name."""
    env = os.environ if environ is None else environ
    for name, count in PROFILES.items():
        settings.register_profile(name, max_examples=count)
    chosen = env.get("HYPOTHESIS_PROFILE") or ("ci" if env.get("CI") else "default")
    if chosen not in PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE={chosen!r}: not one of {sorted(PROFILES)}")
    settings.load_profile(chosen)
    return chosen


def examples(full: int) -> int:
    """``full`` examples scaled by the loaded profile, and never fewer than
    ``min(full, FLOOR)``."""
    scaled = round(full * settings().max_examples / PROFILES["default"])
    return max(min(full, FLOOR), scaled)
