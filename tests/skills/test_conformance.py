"""Our grammar against the Agent Skills specification, and against its reference validator.

The table is in :mod:`tests.skills.conformance`. The reference validator is the
``skills-ref`` package (a dev dependency), run through its Python API over the very same
folders; the two must agree except for the commented cases in ``REFERENCE_DIFFERS``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import skills_ref  # type: ignore[import-untyped]

from tests.skills.conformance import CASES, OURS_DIFFER, REFERENCE_DIFFERS, Case
from thalos_bot.skills.discovery import ScanResult, scan_roots

IDS = [case.id for case in CASES]


def test_case_ids_are_unique_and_the_difference_lists_name_real_cases() -> None:
    assert len(set(IDS)) == len(IDS)
    assert set(OURS_DIFFER) <= set(IDS)
    assert set(REFERENCE_DIFFERS) <= set(IDS)
    assert {c.id for c in CASES if c.ours is not None} == set(OURS_DIFFER)


def ours(case: Case, tmp_path: Path) -> tuple[bool, ScanResult]:
    root = tmp_path / "skills"
    case.write(root)
    scan = scan_roots([root])
    loaded = [s.name for s in scan.skills]
    valid = bool(loaded) and not scan.errors and not scan.outside
    return valid, scan


def reference(case: Case, tmp_path: Path) -> bool:
    folder = case.write(tmp_path / "reference")
    try:
        errors = skills_ref.validate(folder)
    except UnicodeDecodeError:  # skills-ref does not catch it: the file is refused
        return False
    return not errors


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_our_verdict_is_the_spec_s(case: Case, tmp_path: Path) -> None:
    valid, scan = ours(case, tmp_path)
    assert valid == case.expected, [str(e) for e in (*scan.errors, *scan.outside)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_reference_validator_agrees(case: Case, tmp_path: Path) -> None:
    valid, _ = ours(case, tmp_path / "ours")
    judged = reference(case, tmp_path / "ref")
    if case.id in REFERENCE_DIFFERS:
        assert judged != valid, f"skills-ref now agrees on {case.id}: drop it from the list"
    else:
        assert judged == valid


def test_the_real_violation_is_shown_not_a_size_limit(tmp_path: Path) -> None:
    # A 1,068-character description and a 90 KB body: only the description is wrong.
    (case,) = [c for c in CASES if c.id == "description-1068-big-body"]
    _, scan = ours(case, tmp_path)
    (error,) = scan.errors
    assert [p.describe() for p in error.problems] == [
        "description: at most 1024 characters (it has 1068)"
    ]
