"""``make bench``: every benchmark that can run here, each recording its section.

The WebSocket load and worker failover benchmarks need the production shape (PostgreSQL +
Redis); they run only when ``DATABASE_URL`` and ``REDIS_URL`` point at them.
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
        "bench.chat_search",
    ]
    if os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL"):
        modules += ["bench.ws_load", "bench.worker_failover"]
    else:
        print(
            "bench.ws_load and bench.worker_failover skipped: set DATABASE_URL=postgres://… "
            "and REDIS_URL=redis://…"
        )
    failed = 0
    for module in modules:
        print(f"== {module}", flush=True)
        failed |= subprocess.call([sys.executable, "-m", module, "--write"])
    return failed


if __name__ == "__main__":
    sys.exit(main())
