"""How a compaction ended, as every caller reads it (``compaction.run``)."""

from __future__ import annotations

from dataclasses import dataclass

from agents.events import ServerEvent
from agents.reasons import wire_text


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    status: str  # "done" | "failed" | "skipped" | "nothing" | "cancelled" | "previewed"
    reason: str | None = None
    error: str | None = None
    removed_count: int = 0
    summary_message_id: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    event: ServerEvent | None = None
    record_id: int | None = None  # its CompactionRecord (done: the one an undo names)

    @property
    def changed_history(self) -> bool:
        return self.status == "done"


class CompactionCancelled(Exception):
    """A stop cancelled the compaction (or its lease was lost): it writes nothing."""


class CompactionFailure(Exception):
    """A compaction that cannot end well, with its reason of ``agents.reasons``."""

    def __init__(self, reason: str, error: str | None = None) -> None:
        self.reason = reason
        self.error = error if error is not None else wire_text(reason)
        super().__init__(self.error)


def cancelled_outcome(tokens: int = 0) -> CompactionOutcome:
    return CompactionOutcome(
        status="cancelled",
        reason="cancelled",
        error=wire_text("cancelled"),
        tokens_before=tokens,
        tokens_after=tokens,
    )


def in_progress_outcome() -> CompactionOutcome:
    """Another holder has the session: nothing was tried."""
    return CompactionOutcome(status="skipped", reason="in_progress", error=wire_text("in_progress"))


def saved_percent(before: int, after: int) -> int:
    return round(100 * (before - after) / before) if before else 0
