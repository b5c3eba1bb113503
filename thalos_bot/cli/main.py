"""``thalos-bot``: one entry point, a subcommand per job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from thalos_bot import __version__
from thalos_bot.channels.ports import EXIT_CONFIG
from thalos_bot.config.loader import ConfigError
from thalos_bot.domain.wrapped import found_in

Handler = Callable[[argparse.Namespace], int]


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        "-c",
        type=Path,
        metavar="PATH",
        help="the bot.toml to use (default: $THALOS_BOT_CONFIG, else ./bot.toml, "
        "else built-in defaults)",
    )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line. Given ``argv`` (the words to parse) that name a core
    command, the channel plug-ins are not loaded: only ``init``'s transport flags and
    the plug-ins' own commands need them, and neither can be chosen then."""
    chosen = _command_word(argv)
    parser = argparse.ArgumentParser(
        prog="thalos-bot",
        description="A channels-first chat bot daemon for Claude agents.",
    )
    parser.add_argument("--version", action="version", version=f"thalos-bot {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser("check", help="validate the configuration and summarise it")
    _add_config(check)
    check.set_defaults(handler=_lazy("thalos_bot.cli.cmd_check", "run"))

    from thalos_bot.cli.cmd_api import register as register_api

    register_api(commands, _add_config)
    from thalos_bot.cli.cmd_spend import register as register_spend

    register_spend(commands, _add_config)

    people = commands.add_parser(
        "people", help="list the people ([[people]]), their linked chats, and whom each runs as"
    )
    _add_config(people)
    people.set_defaults(handler=_lazy("thalos_bot.cli.people_lines", "run"), people_command=None)
    people_actions = people.add_subparsers(dest="people_command", metavar="ACTION")
    link = people_actions.add_parser(
        "link", help="use a /link code: this terminal becomes that chat's person"
    )
    link.add_argument("code")
    unlink = people_actions.add_parser("unlink", help="end a linked identity (kept on record)")
    unlink.add_argument("transport", help="telegram, matrix, slack, discord, web or console")
    unlink.add_argument("user", help="the id on that transport")
    for people_action in (link, unlink):
        _add_config(people_action)
        people_action.set_defaults(handler=_lazy("thalos_bot.cli.people_lines", "run"))

    chat = commands.add_parser("chat", help="talk to an agent in this terminal (or over a pipe)")
    _add_config(chat)
    chat.add_argument(
        "--offline",
        action="store_true",
        help="use the scripted echo model: no API key, no network, bot.toml unchanged",
    )
    chat.set_defaults(handler=_lazy("thalos_bot.cli.cmd_serve", "run_chat"))

    tools = commands.add_parser(
        "tools", help="start the MCP servers and list the tools each agent can use"
    )
    _add_config(tools)
    tools.add_argument("--agent", metavar="ID", help="only this agent")
    tools.set_defaults(handler=_lazy("thalos_bot.cli.cmd_tools", "run"))

    skills = commands.add_parser("skills", help="list the skill library, or check its files")
    actions = skills.add_subparsers(dest="skills_command", metavar="ACTION", required=True)
    for action, text in (
        ("list", "every skill: its file, active or inactive, load errors"),
        ("check", "check the skill files; exit 1 on any problem"),
        ("sync", "store the skill files now, as the daemon does at start-up"),
    ):
        sub = actions.add_parser(action, help=text)
        _add_config(sub)
        if action != "sync":
            sub.add_argument(
                "--agent", metavar="ID", help="only what this agent's skills globs select"
            )
        sub.add_argument(
            "--quiet", "-q", action="store_true", help="no progress bar or progress lines"
        )
        sub.set_defaults(handler=_lazy("thalos_bot.cli.cmd_skills", f"run_{action}"))
    review = actions.add_parser(
        "review",
        help="show what changed in a skill since it was accepted, and accept it",
    )
    _add_config(review)
    review.add_argument(
        "name", nargs="?", metavar="NAME", help="the skill; none lists those waiting"
    )
    review.add_argument(
        "--accept", action="store_true", help="accept the files shown without asking"
    )
    review.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    review.set_defaults(handler=_lazy("thalos_bot.cli.cmd_skills_review", "run_review"))

    from thalos_bot.cli.cmd_memory import register as register_memory

    register_memory(commands, handler=_lazy("thalos_bot.cli.cmd_memory", "run"))

    from thalos_bot.cli.cmd_audit import register as register_audit

    register_audit(commands)
    from thalos_bot.cli.cmd_schedules import register as register_schedules

    register_schedules(commands, handler=_lazy("thalos_bot.cli.cmd_schedules", "run"))

    from thalos_bot.cli.cmd_media import register as register_media

    register_media(commands, handler=_lazy("thalos_bot.cli.cmd_media", "run"))

    from thalos_bot.cli.cmd_db import register as register_db

    register_db(commands, handler=_lazy("thalos_bot.cli.cmd_db", "run"))

    from thalos_bot.cli.init_args import register as register_init

    register_init(
        commands, handler=_lazy("thalos_bot.cli.cmd_init", "run"), flags=chosen in {None, "init"}
    )

    doctor = commands.add_parser("doctor", help="check everything the daemon needs")
    _add_config(doctor)
    doctor.add_argument(
        "--offline",
        action="store_true",
        help="skip the checks that call the Anthropic or chat APIs",
    )
    doctor.add_argument(
        "--fix",
        action="store_true",
        help="first mend what is safe (state folder, file modes), after a database backup",
    )
    doctor.add_argument(
        "--security",
        action="store_true",
        help="score the exposure: listeners, file modes, the unit's sandbox, skills, "
        "tools and admins (every ✗ with its fix)",
    )
    doctor.set_defaults(handler=_lazy("thalos_bot.cli.cmd_doctor", "run"), quiet_logs=True)

    status = commands.add_parser(
        "status", help="is the daemon running; its channels, outbox, schedules, spending"
    )
    _add_config(status)
    status.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    status.set_defaults(handler=_lazy("thalos_bot.cli.cmd_status", "run"))

    logs = commands.add_parser(
        "logs", help="the daemon's log: the journal under systemd, else the chat log"
    )
    _add_config(logs)
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument(
        "--since",
        metavar="WHEN",
        help="only lines from then on: a duration back (30m, 2h, 1d) or a time "
        "(2026-12-01 09:00, in UTC)",
    )
    logs.set_defaults(handler=_lazy("thalos_bot.cli.cmd_logs", "run"))

    run = commands.add_parser("run", help="run the daemon: serve every enabled channel")
    _add_config(run)
    run.add_argument(
        "--offline",
        action="store_true",
        help="every channel with the scripted echo model: no API key, no model's network",
    )
    run.set_defaults(handler=_lazy("thalos_bot.cli.cmd_serve", "run_daemon"))

    from thalos_bot.cli.cmd_service import register as register_service

    register_service(commands)

    if chosen is None or chosen not in commands.choices:
        from thalos_bot.cli.plugins import register_plugin_commands

        register_plugin_commands(commands)
    return parser


def _command_word(argv: Sequence[str] | None) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), None when
    it names none or ``argv`` is not known."""
    return next((word for word in argv or () if not word.startswith("-")), None)


def _lazy(module: str, name: str) -> Handler:
    """Import a command's module only when it runs, so ``--help`` stays fast."""

    def handler(args: argparse.Namespace) -> int:
        from importlib import import_module

        func: Handler = getattr(import_module(module), name)
        return func(args)

    return handler


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words)
    args = parser.parse_args(words)
    handler: Handler = args.handler
    # One-shot commands log only problems, to stderr; `chat` and `run` reconfigure.
    from thalos_bot.telemetry.logging import configure_logging

    # A command that sets ``quiet_logs`` (doctor, telegram pair) reports every problem in
    # its own lines, so log lines are kept out of its output altogether.
    quiet = getattr(args, "quiet_logs", False)
    configure_logging("critical" if quiet else "warning", "auto", sys.stderr)
    try:
        code = handler(args)
        sys.stdout.flush()
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_went_away()
    except PermissionError as exc:
        print(f"error: {permission_problem(exc, argv)}", file=sys.stderr)
        return EXIT_CONFIG
    except BaseExceptionGroup as group:  # from a command's task group
        denied = found_in(group, PermissionError)
        if denied is None:
            raise
        print(f"error: {permission_problem(denied, argv)}", file=sys.stderr)
        return EXIT_CONFIG
    return code


def permission_problem(exc: PermissionError, argv: Sequence[str] | None) -> str:
    """A file or folder this user may not use (the "forgot sudo" case: the state folder
    of a service that runs as its own user), said in one line with what to run."""
    import os
    import pwd
    from pathlib import Path

    where = Path(str(exc.filename)) if exc.filename else None
    owner = None
    for place in [where, *(where.parents if where else [])]:
        if place is None:
            continue
        try:
            owner = pwd.getpwuid(place.stat().st_uid).pw_name
            break
        except (OSError, KeyError):
            continue
    me = pwd.getpwuid(os.getuid()).pw_name
    words = " ".join(sys.argv[1:] if argv is None else argv)
    how = (
        f"run it as that user: sudo -u {owner} thalos-bot {words}"
        if owner is not None and owner != me
        else "check the modes of the state folder (`thalos-bot doctor --fix` mends them)"
    )
    return (
        f"{where or 'a file'}: permission denied for {me}"
        + (f" (it belongs to {owner})" if owner is not None and owner != me else "")
        + f"; {how}"
    )


EXIT_BROKEN_PIPE = 128 + 13
"""What a shell reports for a program killed by SIGPIPE (``check | head -3``)."""


def _reader_went_away() -> int:
    """The other end of stdout closed (``| head``): stop quietly, as a tool killed by
    SIGPIPE would. Python would flush stdout again at exit and print a traceback, so
    stdout is pointed at /dev/null first."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
