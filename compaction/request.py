"""The values a compaction runs on: what a caller asks for (``CompactionRequest``) and the
one frozen value its stages share while it runs (``CompactionRun``).

Every caller — the socket, REST, the admin action, the command, a chat turn's automatic
compaction, a preview — builds a request and hands it to ``compaction.run``; nothing travels
between the stages as positional arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import condense as core
from agents.leases import SessionLease
from agents.models import ChatSession, CompactionRecord
from compaction.context import CompactionInput
from compaction.outcome import CompactionCancelled, CompactionOutcome
from compaction.records import CompactionAudit

if TYPE_CHECKING:  # the stages' values, for the callables' signatures only
    from compaction.planning import Planned
    from compaction.summarizing import Summarized

Reason = Literal["manual", "auto"]


@dataclass(frozen=True, slots=True)
class Given:
    """A summary written earlier (an accepted preview): its result as it applies to the
    history now (``result_for`` raises ``services.SpanChanged`` when it no longer does),
    its chain depth, its audit, and what the write-back also does in its transaction."""

    result_for: Callable[[CompactionInput], core.CompactionResult]
    chain_depth: int
    audit: CompactionAudit
    on_record: Callable[[CompactionRecord], None] | None = None


# What becomes of a summarized compaction instead of its write-back (a preview keeps it).
Keep = Callable[["CompactionRun", "Planned", "Summarized"], CompactionOutcome]


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """A compaction asked for. ``force``: compact even under the threshold (default: only a
    manual one, or one ``up_to`` a message, does); ``trigger``: what the audit says asked
    (auto, manual, api, command; default from ``reason``); ``instructions``: this
    compaction's focus, after the agent's standing ones; ``keep``: what becomes of the
    summary instead of the write-back; ``given``: apply that summary (no model call, no
    ``compaction_start``; a refusal raises instead of being recorded)."""

    session_id: str
    reason: Reason = "manual"
    trigger: str | None = None
    instructions: str | None = None
    force: bool | None = None
    up_to: int | None = None
    keep: Keep | None = None
    given: Given | None = None
    # told (request, of requests) as each summary request starts: the command's progress
    progress: Callable[[int, int], None] | None = None
    request_id: str = ""  # the REST call that waits for its record (``runs``)

    @property
    def forced(self) -> bool:
        return (self.reason == "manual" if self.force is None else self.force) or (
            self.up_to is not None
        )


@dataclass(frozen=True, slots=True)
class CompactionRun:
    """One compaction while it runs, under ``lease`` (its own, or its turn's)."""

    session: ChatSession
    request: CompactionRequest
    audit: CompactionAudit
    lease: SessionLease

    @property
    def session_id(self) -> str:
        return str(self.session.pk)

    @property
    def reason(self) -> Reason:
        return self.request.reason

    @property
    def automatic(self) -> bool:
        return self.request.reason == "auto" and self.request.up_to is None

    def check(self) -> None:
        """Between two summary requests and before the write-back, without the database:
        a stop, or a lease the heartbeat found taken, ends the compaction here."""
        if self.lease.stop.requested or self.lease.lost:
            raise CompactionCancelled
