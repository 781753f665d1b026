"""``make bench``: every benchmark that can run here, each recording its section.

The WebSocket load benchmark needs the production shape (PostgreSQL + Redis); it runs
only when ``DATABASE_URL`` and ``REDIS_URL`` point at them.
"""

from __future__ import annotations

import os
import subprocess
import sys


def main() -> int:
    modules = [
        "bench.compaction_core",
        "bench.compaction_fidelity",
        "bench.chat_turn",
        "bench.background_compaction",
        "bench.sdk_request",
        "bench.recall_search",
    ]
    if os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL"):
        modules.append("bench.ws_load")
    else:
        print("bench.ws_load skipped: set DATABASE_URL=postgres://… and REDIS_URL=redis://…")
    failed = 0
    for module in modules:
        print(f"== {module}", flush=True)
        failed |= subprocess.call([sys.executable, "-m", module, "--write"])
    return failed


if __name__ == "__main__":
    sys.exit(main())
