"""Issue 33's measures: each plug-in's non-test ``.py`` lines, and the kit's lines that
only one transport reaches.

A kit module (``thalos_bot/channels/**``) is reached by a plug-in when the plug-in
imports it, directly or through other kit modules; by the core when any module of
``thalos_bot`` outside the kit does. Kit code reached by exactly one plug-in and not by
the core is "used by only one transport" (the issue allows 200 such lines).

Run: ``python -m bench.plugin_lines``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = "thalos_bot.channels"
ENCRYPTION = {
    "attachments",
    "b64",
    "backup",
    "cross_signing",
    "crypto",
    "crypto_db",
    "crypto_shared",
    "crypto_store",
    "encryption",
    "key_asks",
    "key_requests",
    "recovery",
    "room_keys",
    "sas",
    "sas_emoji",
    "sas_pending",
    "sealing",
    "setup_command",
    "signing",
    "trust",
    "unwedge",
    "verify_command",
}
"""Matrix's end-to-end encryption modules, counted apart (the issue's goal for Matrix
is set without them)."""


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "tests" not in p.relative_to(ROOT).parts)


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, name: str) -> set[str]:
    """The modules ``path`` (module ``name``) imports, absolute, with each ``from X
    import Y`` also naming ``X.Y`` (Y may be a module)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def reach(starts: Iterable[str], graph: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [s for s in starts if s in graph]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parent = module.rpartition(".")[0]  # importing a module runs its packages' too
        todo.extend(m for m in (*graph[module], parent) if m in graph and m not in seen)
    return seen


def main() -> None:
    kit_files = {module_name(p, ROOT): p for p in sources(ROOT / "thalos_bot" / "channels")}
    graph = {name: imports(path, name) for name, path in kit_files.items()}
    core = {
        module_name(p, ROOT): p
        for p in sources(ROOT / "thalos_bot")
        if module_name(p, ROOT) not in kit_files
    }
    core_uses = reach((m for name, path in core.items() for m in imports(path, name)), graph)

    print("plug-in      lines   (encryption apart)")
    users: dict[str, set[str]] = {name: set() for name in kit_files}
    total = 0
    for folder in sorted((ROOT / "channels").iterdir()):
        files = sources(folder)
        if not files:
            continue
        plugin = folder.name
        count = sum(lines(p) for p in files)
        total += count
        crypto = sum(lines(p) for p in files if plugin == "matrix" and p.stem in ENCRYPTION)
        apart = f"   ({count - crypto:,} + {crypto:,})" if crypto else ""
        print(f"{plugin:10} {count:7,}{apart}")
        base = folder
        direct = {m for p in files for m in imports(p, module_name(p, base))}
        for module in reach(direct, graph):
            users[module].add(plugin)
    print(f"{'all':10} {total:7,}")

    single = {
        name: next(iter(plugins))
        for name, plugins in users.items()
        if len(plugins) == 1 and name not in core_uses
    }
    print("\nkit modules only one transport reaches (and the core does not):")
    for name in sorted(single):
        print(f"  {name:55} {lines(kit_files[name]):5}  {single[name]}")
    print(f"  total {sum(lines(kit_files[n]) for n in single)} lines (goal <= 200)")
    unused = sorted(n for n, p in users.items() if not p and n not in core_uses)
    if unused:
        print("\nkit modules no transport and not the core imports (documentation):")
        for name in unused:
            print(f"  {name:55} {lines(kit_files[name]):5}")


if __name__ == "__main__":
    main()
