"""``thalos-bot init``: write a commented ``bot.toml`` from the shipped sample.

It asks for the model, the state folder, and which installed transports to use (each
transport's manifest says how it is offered: its question, the keys of its table, its
secrets); flags answer without asking, and with no terminal only flags and defaults
count. It copies the shipped skills beside the file, never overwrites without
``--force``, and says what to do next. In a terminal it then offers
(:mod:`.init_offers`) to write the secrets file, to pair right away where a transport
pairs that way, and an offline trial.
"""

from __future__ import annotations

import argparse
import getpass
import re
import shutil
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from thalos_bot.channels.manifest import Manifest, Setup
from thalos_bot.channels.registry import discover, shipped_channels
from thalos_bot.cli.init_offers import (
    Offered,
    offer_pairing,
    offer_secrets,
    offer_trial,
    sourceable,
)
from thalos_bot.config.limits import LimitsSettings
from thalos_bot.config.loader import display_path, read_toml, validate
from thalos_bot.config.models import Settings
from thalos_bot.shipped import ShippedFileMissingError, shipped

Ask = Callable[[str], str]


def transports() -> dict[str, Setup]:
    """The installed transports ``init`` offers, in the order it asks about them."""
    setups = {
        name: setup
        for name, plugin in discover().items()
        if isinstance(plugin, Manifest) and (setup := plugin.offer()) is not None
    }
    return dict(sorted(setups.items(), key=lambda item: (item[1].order, item[0])))


def _title(name: str) -> str:
    """How the transport names itself (its pairing title), else its name."""
    plugin = discover().get(name)
    pairing = plugin.pairing if isinstance(plugin, Manifest) else None
    return pairing.title if pairing is not None else name


@dataclass(frozen=True, slots=True)
class Answers:
    model: str
    state_dir: str
    channels: tuple[str, ...] = ()
    """The transports chosen, in the order init asks about them."""

    def has(self, name: str) -> bool:
        return name in self.channels


def run(args: argparse.Namespace) -> int:
    folder: Path = args.folder
    target = folder / "bot.toml"
    blocker = next((p for p in [folder, *folder.parents] if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        print(
            f"error: {display_path(blocker)} is a file, not a folder; name the folder "
            "bot.toml goes in (`thalos-bot init FOLDER`, or `init` in that folder)",
            file=sys.stderr,
        )
        return 1
    if target.exists() and not args.force:
        print(
            f"error: {display_path(target)} already exists; pass --force to overwrite it",
            file=sys.stderr,
        )
        return 1
    try:
        sample = shipped("bot.toml").read_text(encoding="utf-8")
    except ShippedFileMissingError as exc:
        print(f"error: {exc}; reinstall thalos-bot", file=sys.stderr)
        return 1
    defaults = tomlkit.parse(sample)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    answers = gather(args, defaults, input if interactive else None)
    warning = model_warning(answers.model)
    if warning is not None:
        print(warning, file=sys.stderr)
    setups = transports()
    for name in answers.channels:
        if name not in setups:
            print(
                f"warning: the {name} channel is not installed, so bot.toml gets no "
                f"[channels.{name}] table; install it (pip install ./channels/{name}, or "
                f"`--with ./channels/{name}` for uv and pipx) and run init again",
                file=sys.stderr,
            )
    answers = replace(answers, channels=tuple(n for n in answers.channels if n in setups))
    text = render(sample, answers)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(
            f"error: cannot write {display_path(target)} ({exc.strerror or exc}); nothing "
            "was written: choose a folder this user may write in",
            file=sys.stderr,
        )
        return 1
    _check_written(target)
    skills = _copy_skills(folder)
    print(f"Wrote {display_path(target)}" + (f" and {display_path(skills)}/." if skills else "."))
    if not interactive:
        print(next_steps(target, answers))
        return 0
    chosen = {name: setups[name] for name in answers.channels}
    secrets = [secret for setup in chosen.values() for secret in setup.secrets]
    given = offer_secrets(folder, secrets, ask=input, ask_secret=getpass.getpass)
    paired = {
        name
        for name, setup in chosen.items()
        if setup.pair_now
        and offer_pairing(target, given, name, setup, title=_title(name), ask=input) == 0
    }
    print(next_steps(target, answers, given, paired=paired))
    offer_trial(target, ask=input)
    return 0


def gather(args: argparse.Namespace, sample: tomlkit.TOMLDocument, ask: Ask | None) -> Answers:
    """The flags, else the person's answers (when ``ask`` is given), else the sample's."""
    provider = sample.get("provider")
    model_default = str(provider.get("model", "")) if isinstance(provider, Table) else ""
    state_default = str(sample.get("state_dir", "state"))
    model = args.model or _ask(ask, "Model", model_default)
    state_dir = args.state_dir or _ask(ask, "State folder (relative to bot.toml)", state_default)
    channels = []
    for name, setup in transports().items():
        flag: bool | None = getattr(args, name, None)
        if flag is None:
            flag = _ask_yes_no(ask, f"{setup.question} (y/N)", default=False)
        if flag:
            channels.append(name)
    for name in shipped_channels():  # asked for by flag, but not installed
        if name not in channels and getattr(args, name, None):
            channels.append(name)
    return Answers(
        model=model.strip() or model_default, state_dir=state_dir, channels=tuple(channels)
    )


YES, NO = frozenset({"y", "yes"}), frozenset({"n", "no"})


def _ask_yes_no(ask: Ask | None, question: str, *, default: bool) -> bool:
    """Yes or no; any other answer asks again (a typo must not pick for the person)."""
    while True:
        answer = _ask(ask, question, "y" if default else "n").strip().lower()
        if answer in YES | NO:
            return answer in YES
        print("Please answer y or n.")


def model_warning(model: str) -> str | None:
    """A model the price table does not know: /status and the cost limits cannot price it."""
    if LimitsSettings().price_table().price_of(model) is not None:
        return None
    return (
        f"warning: no price is known for the model {model!r}: /status shows no cost for it "
        f'and limits.daily_cost_usd cannot count it; check the name, or add [limits.prices."'
        f'{model}"] with input and output prices'
    )


def _ask(ask: Ask | None, question: str, default: str) -> str:
    if ask is None:
        return default
    try:
        answer = ask(f"{question} [{default}]: ").strip()
    except EOFError:
        return default
    return answer or default


def render(sample: str, answers: Answers) -> str:
    """The sample with the answers filled in, every comment kept."""
    for name in answers.channels:
        sample = _uncomment(sample, f"# [channels.{name}]")
    doc = tomlkit.parse(sample)
    doc["state_dir"] = answers.state_dir
    provider = doc.get("provider")
    if isinstance(provider, Table):
        provider["model"] = answers.model
    setups = transports()
    for name in answers.channels:
        channels = doc.setdefault("channels", tomlkit.table(is_super_table=True))
        section: Any = channels.get(name)
        if not isinstance(section, Table):
            section = channels[name] = tomlkit.table()
        for key, value, comment in setups[name].keys:
            section[key] = tomlkit.item(value).comment(comment)
    return tomlkit.dumps(doc)


COMMENTED_KEY = re.compile(r"# \w+\s*=")
"""A commented-out ``key = value`` line of the sample."""


def _uncomment(sample: str, marker: str) -> str:
    """Turn the sample's commented block that starts with ``marker`` (e.g.
    ``# [channels.telegram]``) into a real table: the header and the commented keys
    right under it. The block ends at the first other line: a blank line, prose, or
    the next commented table (the sample's blocks follow one another with no blank
    line between them, and they stay commented)."""
    header = re.compile(re.escape(marker) + r"\s*(#.*)?$")
    out: list[str] = []
    inside = False
    for line in sample.splitlines(keepends=True):
        if header.match(line.rstrip("\n")):
            inside = True
        elif not (inside and COMMENTED_KEY.match(line)):
            inside = False
        out.append(line[2:] if inside else line)
    return "".join(out)


def _check_written(target: Path) -> None:
    """What init writes must load; a failure here is a bug, reported like any config."""
    validate(Settings, read_toml(target), display_path(target))


def _copy_skills(folder: Path) -> Path | None:
    """Copy the shipped skills to ``folder/skills`` unless that folder exists."""
    destination = folder / "skills"
    if destination.exists():
        return None
    try:
        source = shipped("skills")
    except ShippedFileMissingError:
        return None
    if source.resolve() == destination.resolve():
        return None
    shutil.copytree(source, destination)
    return destination


def next_steps(
    target: Path,
    answers: Answers,
    offered: Offered | None = None,
    *,
    paired: Collection[str] = (),
) -> str:
    here = target.resolve().parent == Path.cwd().resolve()
    config = "" if here else f" -c {display_path(target)}"
    commands = [
        (f"thalos-bot chat --offline{config}", "try it now: the echo model, no key needed"),
    ]
    secrets = offered.secrets if offered is not None else None
    if secrets is not None:
        commands.append(
            (f"set -a; . {sourceable(secrets)}; set +a", "puts its keys in the environment")
        )
    else:
        commands.append(("export ANTHROPIC_API_KEY=...", "from console.anthropic.com"))
    setups = transports()
    chosen = [(name, setups[name]) for name in answers.channels if name in setups]
    if secrets is None:
        commands += [
            (f"export {secret.name}=...", secret.where)
            for _, setup in chosen
            for secret in setup.secrets
        ]
    commands += [
        (f"thalos-bot {name} pair{config}", setup.pair_step)
        for name, setup in chosen
        if setup.pair_step and name not in paired
    ]
    served = [setup.serves for _, setup in chosen if setup.serves]
    commands += [
        (f"thalos-bot check{config}", "what the file describes"),
        (f"thalos-bot chat{config}", "talk to it here"),
        (
            f"thalos-bot run{config}",
            "serves every channel" + (f": {', '.join(served)}" if served else ""),
        ),
    ]
    width = max(len(command) for command, _ in commands) + 2
    steps = ["", "Next:", *(f"  {c.ljust(width)}# {why}" for c, why in commands)]
    steps.append(
        "To run it as a service: `sudo thalos-bot service install` (or `--user`) writes the "
        "unit and its configuration folder."
    )
    return "\n".join(steps)
