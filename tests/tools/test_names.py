"""Qualified names: sanitised, bounded, unique, and independent of listing order."""

from __future__ import annotations

import itertools

from thalos_bot.tools.names import MAX_NAME_LENGTH, assign_names, is_valid_name, sanitise


def _names(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    return {(a.source, a.tool): a.qualified for a in assign_names(pairs)}


def test_plain_names_are_source_and_tool() -> None:
    [named] = assign_names([("fs", "read_file")])
    assert (named.qualified, named.natural, named.note) == ("fs__read_file", "fs__read_file", None)


def test_rejected_characters_become_underscores() -> None:
    [named] = assign_names([("fs", "read.file/v2 (beta)")])
    assert named.qualified == "fs__read_file_v2__beta_"
    assert named.note is not None
    assert sanitise("ok-name_1") == "ok-name_1"
    assert sanitise("") == "_"


def test_the_provider_limit_is_64_characters() -> None:
    assert MAX_NAME_LENGTH == 64
    assert is_valid_name("a" * 64)
    assert not is_valid_name("a" * 65)
    assert not is_valid_name("a.b")


def test_long_names_are_shortened_with_a_stable_hash() -> None:
    long_tool = "describe_" + "very_" * 20 + "long"
    first = assign_names([("github", long_tool)])[0]
    second = assign_names([("github", long_tool), ("fs", "read")])[0]
    assert len(first.qualified) == MAX_NAME_LENGTH
    assert is_valid_name(first.qualified)
    assert first.qualified.startswith("github__describe_very_")
    assert first.qualified == second.qualified
    other = assign_names([("github", long_tool + "_2")])[0]
    assert other.qualified != first.qualified


def test_collisions_are_resolved_the_same_way_in_any_order() -> None:
    pairs = [("fs", "read.file"), ("fs", "read_file"), ("fs", "read file")]
    results = [_names(list(order)) for order in itertools.permutations(pairs)]
    assert all(r == results[0] for r in results)
    names = results[0]
    # The tool whose own name is already valid keeps it; the others are hashed.
    assert names[("fs", "read_file")] == "fs__read_file"
    assert len(set(names.values())) == 3
    assert all(is_valid_name(n) for n in names.values())
    renamed = [a for a in assign_names(pairs) if a.tool != "read_file"]
    assert all(a.note and "fs__read_file" in a.note for a in renamed)


def test_collisions_between_sources_and_separators() -> None:
    names = _names([("a", "b__c"), ("a__b", "c")])
    assert len(set(names.values())) == 2
    assert all(is_valid_name(n) for n in names.values())


def test_a_repeated_pair_is_named_once() -> None:
    assert len(assign_names([("fs", "x"), ("fs", "x")])) == 1
