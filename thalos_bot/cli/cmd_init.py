"""``thalos-bot init``: write a commented ``bot.toml`` from the shipped sample.

It asks for the model, whether to use Telegram and Slack, and the state folder (flags answer
without asking; with no terminal only flags and defaults count), copies the shipped
skills beside the file, never overwrites without ``--force``, and says what to do next.
In a terminal it then offers (:mod:`.init_offers`) to write the secrets file, to pair a
Telegram account right away, and an offline trial.
"""

from __future__ import annotations

import argparse
import getpass
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from thalos_bot.channels.registry import discover
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
TELEGRAM_MARKER = "# [channels.telegram]"
WEB_MARKER = "# [channels.web]"
SLACK_MARKER = "# [channels.slack]"
PAIR_COMMENT = "your id: `thalos-bot telegram pair` adds it"
SLACK_ID_COMMENT = "your member id: Slack profile → ⋮ → Copy member ID"
DISCORD_ID_COMMENT = "your user id: `thalos-bot discord pair` adds it"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = commands.add_parser("init", help="write a commented bot.toml to start from")
    init.add_argument(
        "folder", nargs="?", type=Path, default=Path(), help="where to write bot.toml (.)"
    )
    init.add_argument("--model", help="the Claude model (default: the sample's)")
    telegram = init.add_mutually_exclusive_group()
    telegram.add_argument(
        "--telegram", action="store_true", default=None, help="set up the Telegram channel"
    )
    telegram.add_argument("--no-telegram", dest="telegram", action="store_false")
    web = init.add_mutually_exclusive_group()
    web.add_argument("--web", action="store_true", default=None, help="set up the web chat page")
    web.add_argument("--no-web", dest="web", action="store_false")
    slack = init.add_mutually_exclusive_group()
    slack.add_argument("--slack", action="store_true", default=None, help="set up Slack")
    slack.add_argument("--no-slack", dest="slack", action="store_false")
    discord = init.add_mutually_exclusive_group()
    discord.add_argument(
        "--discord", action="store_true", default=None, help="set up the Discord channel"
    )
    discord.add_argument("--no-discord", dest="discord", action="store_false")
    init.add_argument(
        "--state-dir", metavar="PATH", help="where the database lives, relative to bot.toml"
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing bot.toml")
    init.set_defaults(handler=run)


@dataclass(frozen=True, slots=True)
class Answers:
    model: str
    telegram: bool
    state_dir: str
    web: bool = False
    slack: bool = False
    discord: bool = False


def run(args: argparse.Namespace) -> int:
    folder: Path = args.folder
    target = folder / "bot.toml"
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
    if answers.telegram and not telegram_installed():
        print(
            "warning: the Telegram channel is not installed, so bot.toml gets no "
            "[channels.telegram] table; install it (pip install ./channels/telegram, or "
            "`--with ./channels/telegram` for uv and pipx) and run init again",
            file=sys.stderr,
        )
        answers = replace(answers, telegram=False)
    if answers.web and "web" not in discover():
        print(
            "warning: the web channel is not installed, so bot.toml gets no [channels.web] "
            "table; install it (pip install ./channels/web, or `--with ./channels/web` for "
            "uv and pipx) and run init again",
            file=sys.stderr,
        )
        answers = replace(answers, web=False)
    if answers.slack and "slack" not in discover():
        print(
            "warning: the Slack channel is not installed, so bot.toml gets no "
            "[channels.slack] table; install it (pip install ./channels/slack) and run "
            "init again",
            file=sys.stderr,
        )
        answers = replace(answers, slack=False)
    if answers.discord and "discord" not in discover():
        print(
            "warning: the Discord channel is not installed, so bot.toml gets no "
            "[channels.discord] table; install it (pip install ./channels/discord) and run "
            "init again",
            file=sys.stderr,
        )
        answers = replace(answers, discord=False)
    text = render(sample, answers)
    folder.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    _check_written(target)
    skills = _copy_skills(folder)
    print(f"Wrote {display_path(target)}" + (f" and {display_path(skills)}/." if skills else "."))
    if not interactive:
        print(next_steps(target, answers))
        return 0
    offered = offer_secrets(
        folder,
        telegram=answers.telegram,
        slack=answers.slack,
        discord=answers.discord,
        ask=input,
        ask_secret=getpass.getpass,
    )
    paired = answers.telegram and offer_pairing(target, offered, ask=input) == 0
    print(next_steps(target, answers, offered, paired=paired))
    offer_trial(target, ask=input)
    return 0


def gather(args: argparse.Namespace, sample: tomlkit.TOMLDocument, ask: Ask | None) -> Answers:
    """The flags, else the person's answers (when ``ask`` is given), else the sample's."""
    provider = sample.get("provider")
    model_default = str(provider.get("model", "")) if isinstance(provider, Table) else ""
    state_default = str(sample.get("state_dir", "state"))
    model = args.model or _ask(ask, "Model", model_default)
    state_dir = args.state_dir or _ask(ask, "State folder (relative to bot.toml)", state_default)
    telegram: bool | None = args.telegram
    if telegram is None:
        telegram = _ask_yes_no(ask, "Use Telegram? (y/N)", default=False)
    web: bool | None = getattr(args, "web", None)
    if web is None:
        web = _ask_yes_no(ask, "Serve the web chat page on this machine? (y/N)", default=False)
    slack: bool | None = getattr(args, "slack", None)
    if slack is None:
        slack = _ask_yes_no(ask, "Use Slack? (y/N)", default=False)
    discord: bool | None = getattr(args, "discord", False)
    if discord is None:
        discord = _ask_yes_no(ask, "Use Discord? (y/N)", default=False)
    return Answers(
        model=model.strip() or model_default,
        telegram=telegram,
        state_dir=state_dir,
        web=web,
        slack=slack,
        discord=discord,
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


def telegram_installed() -> bool:
    return "telegram" in discover()


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
    if answers.telegram:
        sample = _uncomment(sample, TELEGRAM_MARKER)
    if answers.web:
        sample = _uncomment(sample, WEB_MARKER)
    if answers.slack:
        sample = _uncomment(sample, SLACK_MARKER)
    doc = tomlkit.parse(sample)
    doc["state_dir"] = answers.state_dir
    provider = doc.get("provider")
    if isinstance(provider, Table):
        provider["model"] = answers.model
    if answers.telegram:
        channels = doc.setdefault("channels", tomlkit.table(is_super_table=True))
        section: Any = channels.get("telegram")
        if not isinstance(section, Table):
            section = tomlkit.table()
            channels["telegram"] = section
        section["enabled"] = tomlkit.boolean("false").comment(
            "`thalos-bot telegram pair` turns it on"
        )
        section["allowed_user_ids"] = tomlkit.array().comment(PAIR_COMMENT)
    if answers.slack:
        channels = doc.setdefault("channels", tomlkit.table(is_super_table=True))
        slack: Any = channels.get("slack")
        if not isinstance(slack, Table):
            slack = tomlkit.table()
            channels["slack"] = slack
        slack["enabled"] = tomlkit.boolean("false").comment("true once allowed_users has you")
        slack["allowed_users"] = tomlkit.array().comment(SLACK_ID_COMMENT)
    if answers.discord:
        channels = doc.setdefault("channels", tomlkit.table(is_super_table=True))
        discord = tomlkit.table()
        discord["enabled"] = tomlkit.boolean("false").comment(
            "`thalos-bot discord pair` turns it on"
        )
        discord["allowed_users"] = tomlkit.array().comment(DISCORD_ID_COMMENT)
        discord["guild_channels"] = tomlkit.array().comment("server channel ids it serves")
        discord["threads"] = tomlkit.boolean("false").comment("a thread per mention")
        channels["discord"] = discord
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
    target: Path, answers: Answers, offered: Offered | None = None, *, paired: bool = False
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
        if answers.telegram:
            commands.append(("export TELEGRAM_BOT_TOKEN=...", "from @BotFather (/newbot)"))
        if answers.slack:
            commands.append(("export SLACK_APP_TOKEN=xapp-...", "Basic Information → App-Level"))
            commands.append(("export SLACK_BOT_TOKEN=xoxb-...", "OAuth & Permissions"))
        if answers.discord:
            commands.append(("export DISCORD_BOT_TOKEN=...", "Developer Portal, Bot, Reset Token"))
    if answers.telegram and not paired:
        commands.append(
            (f"thalos-bot telegram pair{config}", "finds your Telegram id, turns Telegram on")
        )
    if answers.web:
        commands.append(
            (f"thalos-bot web pair{config}", "a one-time login link (after `run` starts)")
        )
    if answers.discord:
        commands.append(
            (f"thalos-bot discord pair{config}", "finds your Discord id, turns Discord on")
        )
    commands += [
        (f"thalos-bot check{config}", "what the file describes"),
        (f"thalos-bot chat{config}", "talk to it here; `run` serves every channel"),
    ]
    width = max(len(command) for command, _ in commands) + 2
    steps = ["", "Next:", *(f"  {c.ljust(width)}# {why}" for c, why in commands)]
    steps.append(
        "To run it as a service: `sudo thalos-bot service install` (or `--user`) writes the "
        "unit and its configuration folder."
    )
    return "\n".join(steps)
