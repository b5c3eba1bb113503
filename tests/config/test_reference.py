"""The configuration reference (docs/configuration.md) and the models agree both ways:
its index of every key is made from the models and must be the current one, and every
key its hand-written tables name must exist in the models."""

from __future__ import annotations

import re
from pathlib import Path

from thalos_bot.cli.config_reference import BEGIN, END, index

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^`\[\[?([a-z_.]+)\]\]?`")
ROW = re.compile(r"^\| `([a-z_][a-z0-9_]*)` \|")


def reference() -> str:
    return (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def model_keys() -> set[str]:
    keys = set()
    for line in index().splitlines():
        found = re.match(r"^\| `\[*([a-z_.0-9]+)\]*` \|", line)
        if found:
            keys.add(found.group(1))
    return keys


def test_the_index_of_every_key_is_the_models_own() -> None:
    text = reference()
    assert BEGIN in text, "docs/configuration.md ends with the index of every key"
    block = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert block == index(), (
        "the index is stale: run `python -m thalos_bot.cli.config_reference` and paste it"
    )


def test_every_key_the_reference_names_exists() -> None:
    text = reference()
    prose = text[: text.index(BEGIN)] if BEGIN in text else text
    known = model_keys()
    section = ""
    in_keys = False
    unknown = []
    for line in prose.splitlines():
        marker = MARKER.match(line)
        if marker:
            section = marker.group(1)
        elif line.startswith("Top level"):
            section = ""
        if line.startswith("| key | default"):
            in_keys = True
            continue
        if not line.startswith("|"):
            in_keys = False
            continue
        row = ROW.match(line)
        if in_keys and row:
            key = f"{section}.{row.group(1)}" if section else row.group(1)
            if key not in known:
                unknown.append(key)
    assert unknown == [], f"the reference names keys the models do not have: {unknown}"
