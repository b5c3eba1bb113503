"""Each transport's manifest imports with its platform SDK absent: ``check``, ``init`` and
``doctor`` describe a transport whose SDK is not installed, and the entry point the core
discovers is that manifest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

SDKS = {
    "telegram": ("thalos_bot_telegram.manifest", ["telegram", "httpx"]),
    "discord": ("thalos_bot_discord.manifest", ["discord", "aiohttp"]),
    "slack": ("thalos_bot_slack.manifest", ["slack_sdk", "slack_bolt", "aiohttp"]),
    "matrix": (
        "thalos_bot_matrix.manifest",
        ["olm", "mautrix", "httpx2", "httpx", "canonicaljson"],
    ),
    "web": ("thalos_bot_web.manifest", ["starlette", "uvicorn", "h11"]),
    # signal-cli is a process of its own: the plug-in has no SDK to leave out.
    "signal": ("thalos_bot_signal.manifest", []),
}

PROBE = """
import importlib.abc, json, sys

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

BLOCKED = set(json.loads(sys.argv[2]))
sys.meta_path.insert(0, Absent())
module = importlib.import_module(sys.argv[1])
manifest = module.manifest
config = manifest.config_model()
print(json.dumps({
    "name": manifest.name,
    "describe": manifest.describe(config),
    "env": manifest.required_env(config),
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED),
}))
"""


@pytest.mark.parametrize("transport", sorted(SDKS))
def test_a_manifest_imports_without_its_sdk(transport: str) -> None:
    module, sdks = SDKS[transport]
    env = {k: v for k, v in os.environ.items() if "TOKEN" not in k and "PASSWORD" not in k}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module, json.dumps(sdks)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["name"] == transport
    assert seen["loaded"] == []
    if transport == "web":
        assert seen["env"] == []  # logins come from pairing codes, no token
        return
    assert seen["env"], "names the tokens it needs"
    for token in seen["env"]:
        assert token in seen["describe"].partition("; note: ")[2], "says which is not set"


@pytest.mark.parametrize("transport", sorted(SDKS))
def test_the_entry_point_names_the_manifest(transport: str) -> None:
    (entry,) = [e for e in entry_points(group="thalos_bot.channels") if e.name == transport]
    assert entry.value == f"{SDKS[transport][0]}:manifest"
