"""No module imports one above it: the layer order of ``../shared/DESIGN.md`` as data.

Every module under ``thalos_bot/`` and every transport plug-in under ``channels/`` is
parsed (``ast``) and each of its imports is checked, wherever it stands: at the top, inside
a function, under ``if TYPE_CHECKING:``. An import may reach its own package, or any
package of a lower layer; never a higher layer, and never a different package of the
same layer (packages that share a layer know nothing of each other). A transport
plug-in is imported by nobody in the core, and never by another plug-in.

Ports are placed below their users (a channel or a tool source imports ports and domain
types, never the service layer or the runtime's internals), so a new upward import means
a port is in the wrong place: move the port down, do not add an exception here.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = "thalos_bot"
PLUGINS = "channels.*"
"""The layer of every transport plug-in (a distribution under ``channels/``)."""

LAYERS: tuple[tuple[str, ...], ...] = (
    # the package's own root: its version and the files it ships
    (CORE, "thalos_bot.shipped"),
    # domain types, and the pure logic on them (cron timing, prompt parts and contributions)
    ("thalos_bot.domain",),
    # a webhook's prompt template (pure; the configuration checks it)
    ("thalos_bot.hooks.template",),
    # the embedding engines (numpy BERT, WordLlama, an endpoint): self-contained, so the
    # configuration can check a local model folder with the engine's own reading of it
    ("thalos_bot.memory.embedding",),
    ("thalos_bot.config",),
    ("thalos_bot.telemetry",),
    # the result guard's rules, then the tool layer that applies it on every result
    ("thalos_bot.guard",),
    ("thalos_bot.tools",),
    # the database, its migrations and the session/conversation/outbox store ports
    ("thalos_bot.storage",),
    # media (files, pages, transcription), speech (answers read aloud) and the webhooks'
    # intake (signatures, dedupe, their store) know nothing of each other
    ("thalos_bot.media", "thalos_bot.speech", "thalos_bot.hooks"),
    ("thalos_bot.providers",),
    # tool sources and prompt contributors that need no runtime
    ("thalos_bot.memory", "thalos_bot.skills"),
    # the schedules' own store (the scheduler that runs them sits far above)
    ("thalos_bot.schedules.store",),
    # the PostgreSQL implementations of every store port (sessions, media, schedules,
    # memory, ...), and the replicas' shared tables on it (inbox, leases, claims)
    ("thalos_bot.storage.pg",),
    ("thalos_bot.cluster",),
    # the channel kit: ports a transport implements
    ("thalos_bot.channels",),
    # the dashboard's read models and pages, and the OpenAI-compatible API: the daemon's
    # own HTTP sides, handed to a transport's listener (the web channel's) to serve
    ("thalos_bot.dashboard", "thalos_bot.api"),
    # the transports: the plug-ins, and the terminal, installed with the core
    (PLUGINS, "thalos_bot.console"),
    ("thalos_bot.runtime",),
    ("thalos_bot.subagents",),
    ("thalos_bot.pump",),
    ("thalos_bot.schedules",),
    # the webhooks' worker: each delivery run once as a detached run
    ("thalos_bot.hooks.worker",),
    # wrappers that instrument the provider, tool and channel ports
    ("thalos_bot.telemetry.instrumented",),
    ("thalos_bot.service",),
    ("thalos_bot.cli",),
    ("thalos_bot.__main__",),
)


@dataclass(frozen=True, slots=True)
class Import:
    path: Path
    line: int
    module: str
    """The importing module, dotted."""
    target: str
    """What it imports, dotted (a module, or a name inside one)."""


def _plugin_packages() -> dict[str, Path]:
    """Each plug-in's import package (``thalos_bot_telegram``) and its folder."""
    found: dict[str, Path] = {}
    for init in sorted(ROOT.glob("channels/*/*/__init__.py")):
        found[init.parent.name] = init.parent
    return found


def _module_files() -> Iterator[tuple[Path, list[str]]]:
    roots = [ROOT / "thalos_bot", *_plugin_packages().values()]
    for package in roots:
        for path in sorted(package.rglob("*.py")):
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            yield path, parts


def _imports(path: Path, parts: list[str]) -> Iterator[Import]:
    is_package = parts[-1] == "__init__"
    own = parts[:-1] if is_package else parts
    module = ".".join(own)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, module, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = own if is_package else own[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                # ``from pkg import mod`` imports the module pkg.mod; ``from mod import
                # name`` a name in mod: the longest-prefix match below handles both
                yield Import(path, node.lineno, module, f"{source}.{alias.name}")


def _layer_of(dotted: str, plugins: set[str]) -> tuple[int, str] | None:
    """The layer index and the layer entry (package) a dotted name falls in; None
    for anything that is not ours (the standard library, third-party packages)."""
    parts = dotted.split(".")
    if parts[0] in plugins:
        return _index(PLUGINS), parts[0]
    if parts[0] == CORE and (len(parts) == 1 or parts[1] not in _core_modules()):
        return _index(CORE), CORE  # the package's own ``__init__`` (``__version__``)
    best: tuple[int, str] | None = None
    for index, layer in enumerate(LAYERS):
        for entry in layer:
            if entry in {PLUGINS, CORE}:
                continue
            if (dotted == entry or dotted.startswith(entry + ".")) and (
                best is None or len(entry) > len(best[1])
            ):
                best = (index, entry)
    return best


@functools.cache
def _core_modules() -> frozenset[str]:
    """The modules and packages directly under ``thalos_bot/``."""
    core = ROOT / CORE
    found = {p.stem for p in core.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    return frozenset(found - {"__init__"})


def _index(entry: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if entry in layer)


def verdict(module: str, target: str, plugins: set[str]) -> str | None:
    """What is wrong with ``module`` importing ``target``: "up", "sideways", "plugin", or
    None when the import is allowed (or not between two of our packages)."""
    source = _layer_of(module, plugins)
    reached = _layer_of(target, plugins)
    if source is None or reached is None or source[1] == reached[1]:
        return None
    if reached[0] > source[0]:
        return "up"
    if reached[0] == source[0]:
        return "sideways"
    if reached[1] in plugins:
        return "plugin"
    return None


WORDING = {
    "up": "reaches up",
    "sideways": "reaches sideways, within its layer",
    "plugin": "imports a transport plug-in (nothing in the core may)",
}


def violations() -> list[str]:
    plugins = set(_plugin_packages())
    found: list[str] = []
    for path, parts in _module_files():
        for imported in _imports(path, parts):
            wrong = verdict(imported.module, imported.target, plugins)
            if wrong is not None:
                where = f"{imported.path.relative_to(ROOT)}:{imported.line}"
                found.append(f"{where}: {imported.module} → {imported.target} {WORDING[wrong]}")
    return found


def test_every_module_is_in_a_layer() -> None:
    """A new top-level package must be given its place in :data:`LAYERS`."""
    plugins = set(_plugin_packages())
    unplaced = sorted(
        {
            ".".join(parts[:2])
            for _, parts in _module_files()
            if _layer_of(".".join(parts), plugins) is None
        }
    )
    assert unplaced == []


def test_no_import_reaches_up() -> None:
    found = violations()
    assert found == [], "\n".join(["imports that reach up (move the port down):", *found])


@pytest.mark.parametrize(
    ("module", "target", "expected"),
    [
        ("thalos_bot.console.render", "thalos_bot.pump.flush", "up"),
        ("thalos_bot.pump.pump", "thalos_bot.channels.notices", None),
        ("thalos_bot.config.guard", "thalos_bot.guard.rules.DEFAULT_RULES", "up"),
        ("thalos_bot.memory.recall", "thalos_bot.skills.catalogue", "sideways"),
        ("thalos_bot.service.host", "thalos_bot_telegram.plugin", "plugin"),
        ("thalos_bot_telegram.plugin", "thalos_bot.service.doctor", "up"),
        ("thalos_bot.storage.pg.media", "thalos_bot.media.store", None),
        ("thalos_bot.storage.audit", "thalos_bot.media.store", "up"),
        ("thalos_bot.runtime.turn", "thalos_bot.runtime.window", None),
        ("thalos_bot.telemetry.otel", "thalos_bot.__version__", None),
        ("thalos_bot.__init__", "thalos_bot.domain.ids", "up"),
    ],
)
def test_the_check_itself(module: str, target: str, expected: str | None) -> None:
    """The rule on made-up imports, so a broken walk cannot pass by finding nothing."""
    assert verdict(module, target, {"thalos_bot_telegram"}) == expected


def test_the_walk_finds_imports() -> None:
    """The walk sees the core and the plug-ins (a glob gone wrong would find nothing)."""
    modules = {".".join(parts[:2]) for _, parts in _module_files()}
    assert {"thalos_bot.pump", "thalos_bot.channels", "thalos_bot_telegram.plugin"} <= modules


def test_imports_inside_functions_and_type_checking_are_seen(tmp_path: Path) -> None:
    package = tmp_path / "thalos_bot" / "channels"
    package.mkdir(parents=True)
    module = package / "late.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from thalos_bot.service.host import Host\n"
        "def f() -> None:\n"
        "    import thalos_bot.pump.pump\n"
        "    from ..pump import notices\n",
        encoding="utf-8",
    )
    targets = [i.target for i in _imports(module, ["thalos_bot", "channels", "late"])]
    assert targets == [
        "typing.TYPE_CHECKING",
        "thalos_bot.service.host.Host",
        "thalos_bot.pump.pump",
        "thalos_bot.pump.notices",
    ]
    wrong = [verdict("thalos_bot.channels.late", target, set()) for target in targets]
    assert wrong == [None, "up", "up", "up"]


PLUGIN_REACH: tuple[str, ...] = (
    "thalos_bot.channels",
    "thalos_bot.domain",
    # ports a transport implements or calls, and the value types they carry
    "thalos_bot.tools.approval",
    "thalos_bot.media.limits",
    "thalos_bot.media.transcription",
    "thalos_bot.media.documents",
    "thalos_bot.media.images",
    "thalos_bot.config.types",
    # a plug-in's own commands (``thalos-bot <channel> pair``) read the configuration
    "thalos_bot.config.loader",
    "thalos_bot.telemetry.redact",
    "thalos_bot.storage.private",
    # the replicas' shared tables (Telegram's webhook replicas; issue 34 moves connection
    # ownership into the kit)
    "thalos_bot.cluster",
    "thalos_bot.storage.pg.database",
    "thalos_bot.storage.database.DatabaseError",
)
"""What of the core a transport plug-in may import: the kit, the domain, and these
ports. Anything else means a mechanism the kit should hold, or a port to move down."""


def plugin_reach_violations() -> list[str]:
    plugins = set(_plugin_packages())
    found: list[str] = []
    for path, parts in _module_files():
        terminal = parts[:2] == [CORE, "console"]  # a transport too, shipped with the core
        if parts[0] not in plugins and not terminal:
            continue
        for imported in _imports(path, parts):
            target = imported.target
            if target.split(".")[0] != CORE or target == CORE:
                continue
            if terminal and target.startswith(f"{CORE}.console"):
                continue
            if any(
                target == allowed or target.startswith(allowed + ".") for allowed in PLUGIN_REACH
            ):
                continue
            where = f"{imported.path.relative_to(ROOT)}:{imported.line}"
            found.append(f"{where}: {imported.module} → {target}")
    return found


def test_a_plugin_reaches_only_the_kit_the_domain_and_named_ports() -> None:
    found = plugin_reach_violations()
    assert found == [], "\n".join(["plug-ins reaching past the kit:", *found])
