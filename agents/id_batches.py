"""Long id lists split for ``pk__in``: one statement carries at most 65,535 bind parameters on
PostgreSQL's wire protocol (server-side binding, ``netaclaw.settings``), so a compaction of
100,000 messages wrote nothing until its write-back went in batches (issue 27 item 1)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# Ids per statement: far under the protocol's 65,535, with room for the statement's other
# parameters; large enough that 100,000 messages take ten round trips per step.
ID_BATCH = 10_000


def id_batches(ids: Sequence[T], size: int = ID_BATCH) -> Iterator[Sequence[T]]:
    """``ids`` in consecutive slices of at most ``size``; nothing for an empty list."""
    if size < 1:
        raise ValueError("size must be at least 1")
    for start in range(0, len(ids), size):
        yield ids[start : start + size]
