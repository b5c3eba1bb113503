"""One line of ``thalos-bot doctor``: a check's outcome, its detail, and how to fix it;
and :class:`DoctorChecks`, the port through which a channel plug-in adds its own lines.

It sits in the channel kit, below the service layer that runs the doctor, so a plug-in
reports its checks without importing the service.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from thalos_bot.domain.unreachable import unreachable_cause

Outcome = Literal["ok", "fail", "skip", "warn"]

GENERIC_FIX = "see the line above; the transport's page in docs/ says more"
"""Said under a failed check that brought no fix of its own (a plug-in's, say)."""
NETWORK_FIX = "check the network and any proxy (HTTPS_PROXY), or base_url if set"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    outcome: Outcome
    detail: str = ""
    fix: str = ""
    """What to do about a failure (or a warning): shown on a ``fix:`` line under it."""

    def line(self) -> str:
        mark = {"ok": "✓", "fail": "✗", "skip": "-", "warn": "!"}[self.outcome]
        return f"{mark} {self.name}" + (f": {self.detail}" if self.detail else "")

    def lines(self) -> list[str]:
        """:meth:`line`, and under a ✗ (or a ! that has one) its ``fix:`` line."""
        fix = self.fix or (GENERIC_FIX if self.outcome == "fail" else "")
        return [self.line()] + ([f"    fix: {fix}"] if fix else [])


def skipped(name: str, *env: str, offline: bool) -> Check | None:
    """The line of a plug-in's check ``name`` that cannot run: with ``--offline``, or
    while a variable of ``env`` (the transport's secrets) is unset; None when it can."""
    if offline:
        return Check(name, "skip", "--offline")
    unset = [var for var in env if not os.environ.get(var, "").strip()]
    if not unset:
        return None
    return Check(name, "skip", f"{', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set")


def unreachable(name: str, where: str, cause: BaseException | str, fix: str = NETWORK_FIX) -> Check:
    """The failed line of a check whose server did not answer: ``cannot reach <where>``,
    and why (an exception's cause in words, see :func:`unreachable_cause`)."""
    why = cause if isinstance(cause, str) else unreachable_cause(cause)
    return Check(name, "fail", f"cannot reach {where}: {why}", fix)


@runtime_checkable
class DoctorChecks(Protocol):
    """Optional for a channel plugin: its own checks (required variables, its API)."""

    def required_env(self, config: BaseModel, *, shared: bool = False) -> list[str]: ...

    async def doctor(self, config: BaseModel, *, offline: bool) -> list[Check]: ...


@runtime_checkable
class ExposureChecks(Protocol):
    """Optional for a channel plugin: ``doctor --security``'s lines for each listener it
    opens (bind address, authentication, TLS, limits); empty when it opens none."""

    def exposure(self, config: BaseModel) -> list[Check]: ...
