"""The doctor's verdict on a database's recorded migrations, on either engine."""

from __future__ import annotations

from collections.abc import Sequence

from thalos_bot.channels.checks import Check


def schema_check(
    name: str, where: str, applied: Sequence[str], known: Sequence[str], newer_fix: str
) -> Check:
    """Fails when ``applied`` names a migration this version does not know (a newer
    version wrote it); otherwise says what the next start will apply, or that the
    schema is current."""
    unknown = [n for n in applied if n not in known]
    if unknown:
        return Check(
            name,
            "fail",
            f"{where}: written by a newer version (unknown: {', '.join(unknown)})",
            newer_fix,
        )
    pending = [n for n in known if n not in applied]
    if pending:
        return Check(name, "ok", f"{where}: {len(pending)} migration(s) will run at the next start")
    return Check(name, "ok", f"{where}, schema current ({applied[-1] if applied else 'empty'})")
