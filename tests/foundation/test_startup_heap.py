"""The ASGI entry point leaves its start-up heap frozen (netaclaw.startup_heap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from netaclaw.startup_heap import YOUNG_THRESHOLD

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json, sys, time
import netaclaw.asgi
started = time.perf_counter()
gc.collect()
print(json.dumps({
    "frozen": gc.get_freeze_count(),
    "scanned": len(gc.get_objects()),
    "sdks": "openai" in sys.modules and "anthropic" in sys.modules,
    "full_collection_ms": (time.perf_counter() - started) * 1000,
}))
"""


def test_the_asgi_entry_point_freezes_what_start_up_loaded() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "netaclaw.settings"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["sdks"]  # loaded before the freeze, not on the first model call
    assert probe["frozen"] > 100_000
    # what a full collection still walks is a small fraction of the heap
    assert probe["scanned"] < probe["frozen"] / 10


def test_young_collections_run_less_often_after_start_up() -> None:
    probe = "import gc, netaclaw.asgi; print(gc.get_threshold()[0])"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "netaclaw.settings"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert int(out.stdout.strip().splitlines()[-1]) == YOUNG_THRESHOLD > 700
