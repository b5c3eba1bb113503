"""The Matrix plug-in loads its encryption's libraries (mautrix's crypto, which pulls
aiohttp in, and libolm) only when encryption is used: imported in a fresh interpreter,
the plug-in and its sync loop leave them out."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("mautrix", "aiohttp", "olm", "Crypto", "Cryptodome")

PROBE = """
import json, sys
import thalos_bot_matrix.plugin, thalos_bot_matrix.sync, thalos_bot_matrix.inbound
print(json.dumps(sorted(sys.modules)))
"""


def test_the_plugin_imports_without_the_encryption_libraries() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert "thalos_bot_matrix" in loaded
    assert sorted(loaded & set(HEAVY)) == []
