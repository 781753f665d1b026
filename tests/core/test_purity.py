"""The core is pure: importing it pulls in no framework, SDK or HTTP client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"django", "openai", "anthropic", "channels", "httpx", "httpx2"}

PROBE = """
import json, sys
import condense
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_core_imports_no_framework_or_sdk() -> None:
    # A fresh interpreter: this test process has Django loaded already.
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PYTHONNOUSERSITE": "1"},
    )
    loaded = set(json.loads(done.stdout))
    assert "condense" in loaded
    # the core stands below everything else of the house: not even compaction's package
    assert not loaded & {"compaction", "agents", "llm"}, sorted(loaded)
    assert not loaded & FORBIDDEN, sorted(loaded & FORBIDDEN)
