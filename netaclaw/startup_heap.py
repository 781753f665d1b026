"""Keep a server process's start-up heap out of the garbage collector's way.

After start-up a Daphne process serving NetaClaw holds about 290,000 objects that live as
long as it does (Django, the models, and above all the two model SDKs' pydantic types),
and CPython's full collection walks every one: ~190 ms each, with the event loop and
every socket on it stopped. In one ``bench.ws_load`` level at 500 clients that was 9
pauses and 2.9 s of collection in 32 s of CPU. ``gc.freeze()`` moves what exists to a
generation the collector never scans (CPython documents it for exactly such long-lived
heaps); what the process creates afterwards is collected as before.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterable

# imported on the first model call otherwise, after the freeze
PRODUCT_PRELOAD = (
    "llm.openai_adapter",
    "llm.anthropic_adapter",
    "compaction.run",
)


# allocations between young collections (CPython's default: 700)
YOUNG_THRESHOLD = 10_000


def freeze_startup_heap(preload: Iterable[str] = ()) -> int:
    """Import ``preload``, collect once, freeze what is left; returns how many objects.

    Young collections then run every ``YOUNG_THRESHOLD`` allocations instead of 700: a
    chat turn allocates thousands of objects that die with it, and every collection
    they lived through copied them a generation up, so that under load the full
    collections came back (8 of ~110 ms in one level, after the freeze)."""
    for module in preload:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    return gc.get_freeze_count()
