"""The seed's server events as typed values (DESIGN 7: one event model, two encodings).

The domain declares them (as Zulip keeps its event types below its views), services and
the chat turn publish them (``agents.broadcast``), and the socket layer encodes them at the
edge: JSON frames of CONTRACT §5 for programs, HTML fragments for the HTMX chat page.
Field names in ``to_json`` are the contract's, exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class CompactionStart:
    session_id: str
    reason: Literal["manual", "auto"]
    type: str = field(default="compaction_start", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "sessionId": self.session_id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class CompactionDone:
    session_id: str
    removed_count: int
    summary_message_id: int | None
    tokens_before: int
    tokens_after: int
    event_message: dict[str, Any] | None = None  # the stored bubble, for the HTML encoder
    # its audit record, for the page's undo button; not on the wire (CONTRACT §5 lists the
    # fields exactly: a program finds the record by summaryMessageId in the records API)
    compaction_id: int | None = None
    type: str = field(default="compaction_done", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "removedCount": self.removed_count,
            "summaryMessageId": self.summary_message_id,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
        }


@dataclass(frozen=True, slots=True)
class CompactionFailed:
    session_id: str
    error: str
    reason: str | None = None
    event_message: dict[str, Any] | None = None
    type: str = field(default="compaction_failed", init=False)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.type,
            "sessionId": self.session_id,
            "error": self.error,
        }
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass(frozen=True, slots=True)
class CompactionSkipped:
    """A compaction was asked for while one of the same session was in flight (seed §9)."""

    session_id: str
    reason: str
    error: str
    type: str = field(default="compaction_skipped", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "reason": self.reason,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class CompactionUndone:
    """A compaction was undone (issue 17 item 1): its originals are active again."""

    session_id: str
    summary_message_id: int | None
    restored_count: int
    compaction_id: int | None = None
    type: str = field(default="compaction_undone", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "summaryMessageId": self.summary_message_id,
            "restoredCount": self.restored_count,
        }


@dataclass(frozen=True, slots=True)
class CompactionProgress:
    """The summary as the auxiliary model writes it (issue 17 item 12): the text so far of
    request ``chunk`` of the ``chunks`` the compaction sends (1-based; the last one writes
    the summary that is kept, earlier ones a part or a running summary of a long middle).
    A request asked again after a rejected answer starts its text over. Throttled by its
    publisher (``compaction.progress``); a client shows the latest ``text`` per ``chunk``."""

    session_id: str
    text: str
    chunk: int
    chunks: int
    type: str = field(default="compaction_progress", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "text": self.text,
            "chunk": self.chunk,
            "chunks": self.chunks,
        }


@dataclass(frozen=True, slots=True)
class CompactionPreviewReady:
    """A manual compaction asked for with ``preview`` wrote its summary and applied nothing
    (issue 17 item 6): ``summary`` is the summary's text as the drawer shows it and an
    accept may rewrite it; ``previewId`` names it in ``preview_accept`` / ``preview_discard``.
    It ends the ``compaction_start`` it followed (no ``compaction_done``)."""

    session_id: str
    preview_id: int
    summary: str
    removed_count: int
    tokens_before: int
    tokens_after: int
    type: str = field(default="compaction_preview", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "previewId": self.preview_id,
            "summary": self.summary,
            "removedCount": self.removed_count,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
        }


@dataclass(frozen=True, slots=True)
class MeterReading:
    """The context meter's figures (DESIGN 13), read by ``agents.meter.meter_read``: the one
    definition of the meter's fields, carried as they are by ``TokenUpdate`` and shown by the
    page's ``MeterView``."""

    used_tokens: int
    max_tokens: int
    threshold_percent: int
    estimated: bool
    input_tokens: int
    output_tokens: int
    api_calls: int
    compaction_count: int = 0
    tool_tokens: int = 0
    compacting: bool = False
    paused_reason: str = ""  # automatic compaction paused (DESIGN 9); manual still works
    token_cap: int | None = None  # the agent's absolute cap (issue 17 item 5)
    # what fills the context, in tokens (issue 17 item 11; ``agents.context_breakdown``):
    # systemPrompt, toolDefinitions, pins, summary, messages (adding up to used_tokens)
    # and free; None when the reader did not know the tools a turn sends
    breakdown: dict[str, int] | None = None

    @property
    def threshold_tokens(self) -> int:
        """Where automatic compaction fires: the percentage or the cap, whichever is first."""
        by_percent = self.max_tokens * self.threshold_percent // 100
        return by_percent if self.token_cap is None else min(by_percent, self.token_cap)

    @property
    def percent(self) -> float:
        return round(100.0 * self.used_tokens / self.max_tokens, 1) if self.max_tokens else 0.0

    @property
    def over_threshold(self) -> bool:
        return self.used_tokens >= self.threshold_tokens


@dataclass(frozen=True, slots=True)
class TokenUpdate(MeterReading):
    """A session's meter reading, as an event."""

    session_id: str = field(kw_only=True)
    type: str = field(default="token_update", init=False)

    @classmethod
    def of(cls, session_id: str, reading: MeterReading) -> TokenUpdate:
        """The event carrying ``reading``."""
        figures = {f.name: getattr(reading, f.name) for f in fields(MeterReading)}
        return cls(session_id=session_id, **figures)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "current": {
                "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens,
                "totalTokens": self.input_tokens + self.output_tokens,
                "apiCalls": self.api_calls,
            },
            "context": {
                "usedTokens": self.used_tokens,
                "maxTokens": self.max_tokens,
                "percent": self.percent,
                "thresholdPercent": self.threshold_percent,
                "estimated": self.estimated,
                "thresholdTokens": self.threshold_tokens,
                "tokenCap": self.token_cap,
                **({"breakdown": self.breakdown} if self.breakdown is not None else {}),
            },
            "compactionCount": self.compaction_count,
            "autoCompaction": {
                "paused": bool(self.paused_reason),
                "reason": self.paused_reason or None,
            },
        }


@dataclass(frozen=True, slots=True)
class CompactionSuggested:
    """Mode ``ask`` (issue 17 item 4): the context reached the threshold; the page asks
    whether to compact. Sent once per crossing (a compaction clears it)."""

    session_id: str
    reading: dict[str, Any]  # TokenUpdate.to_json()["context"]
    type: str = field(default="compaction_suggested", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "sessionId": self.session_id, "context": self.reading}


@dataclass(frozen=True, slots=True)
class MessageStored:
    """A persisted message (user, assistant, tool, system event), serialized."""

    session_id: str
    message: dict[str, Any]
    type: str = field(default="message", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "sessionId": self.session_id, "message": self.message}


@dataclass(frozen=True, slots=True)
class MessageUpdated:
    """A stored message changed in place (issue 17: pinned or unpinned, a summary edited, an
    original brought back by a pin): its new shape, as ``message`` carries it."""

    session_id: str
    message: dict[str, Any]
    type: str = field(default="message_updated", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "sessionId": self.session_id, "message": self.message}


@dataclass(frozen=True, slots=True)
class BranchChanged:
    """A fork made, grown or switched (issue 26 item 1): the messages from ``setAsideFrom``
    on with an id up to ``setAsideThrough`` are no longer the conversation — a client drops
    them from its list (what comes later is the new version's) — and ``marked`` (a message, as ``message`` carries it, with its ``branch``) carries the
    switch between the fork's versions. ``turn``: an answer follows (a regenerate or an
    edit); a switch (``turn`` false) brings back a version a client reads again."""

    session_id: str
    fork_id: int
    kind: str
    version: int
    versions: int
    set_aside_from: int | None = None
    set_aside_through: int | None = None
    marked: dict[str, Any] | None = None
    turn: bool = False
    type: str = field(default="branch_changed", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "forkId": self.fork_id,
            "kind": self.kind,
            "version": self.version,
            "versions": self.versions,
            "setAsideFrom": self.set_aside_from,
            "setAsideThrough": self.set_aside_through,
            "marked": self.marked,
            "turn": self.turn,
        }


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of the streaming answer; ``seq`` counts 1, 2, 3 … within turn ``turn_id``
    (CONTRACT §8: a client that reconnects resumes after the last ``seq`` it has)."""

    session_id: str
    text: str
    turn_id: str = ""
    seq: int = 0
    type: str = field(default="delta", init=False)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "sessionId": self.session_id, "text": self.text}
        if self.turn_id:
            data.update(turnId=self.turn_id, seq=self.seq)
        return data


@dataclass(frozen=True, slots=True)
class TurnDone:
    session_id: str
    stopped: bool = False  # a stop ended the turn (CONTRACT §5)
    turn_id: str = ""
    # whatever ran the turn died or was shut down: it is recorded, and answered again
    interrupted: bool = False
    type: str = field(default="turn_done", init=False)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "sessionId": self.session_id}
        if self.stopped:
            data["stopped"] = True
        if self.turn_id:
            data["turnId"] = self.turn_id
        if self.interrupted:
            data["interrupted"] = True
        return data


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    error: str
    reason: str | None = None
    session_id: str | None = None
    recorded: bool = False  # a stored record says it too (a failed turn's bubble): no alert
    type: str = field(default="error", init=False)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "error": self.error}
        if self.session_id:
            data["sessionId"] = self.session_id
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass(frozen=True, slots=True)
class SessionCreated:
    """A chat was started by its first message (a ``chat`` frame with ``agent`` instead of
    ``sessionId``): told to the socket that sent it, before the message's own events."""

    session_id: str
    agent_id: int
    title: str
    agent_name: str = ""  # for the HTML encoder's chat list entry
    type: str = field(default="session_created", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sessionId": self.session_id,
            "agent": self.agent_id,
            "title": self.title,
        }


@dataclass(frozen=True, slots=True)
class SessionUpdated:
    """A chat's title changed (renamed, or titled by its first message): told to every
    socket of its owner, so every open page's chat list and header follow."""

    session_id: str
    title: str
    type: str = field(default="session_updated", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "sessionId": self.session_id, "title": self.title}


@dataclass(frozen=True, slots=True)
class SessionDeleted:
    """A chat was deleted with its messages and workspace: told to every socket of its
    owner (open pages drop it from their chat list)."""

    session_id: str
    type: str = field(default="session_deleted", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "sessionId": self.session_id}


ServerEvent = (
    CompactionStart
    | CompactionDone
    | CompactionFailed
    | CompactionSkipped
    | CompactionUndone
    | CompactionSuggested
    | CompactionProgress
    | CompactionPreviewReady
    | TokenUpdate
    | MessageStored
    | MessageUpdated
    | BranchChanged
    | Delta
    | TurnDone
    | ErrorEvent
    | SessionCreated
    | SessionUpdated
    | SessionDeleted
)

_BY_TYPE: dict[str, type] = {
    str(cls.__dataclass_fields__["type"].default): cls
    for cls in (
        CompactionStart,
        CompactionDone,
        CompactionFailed,
        CompactionSkipped,
        CompactionUndone,
        CompactionSuggested,
        CompactionProgress,
        CompactionPreviewReady,
        TokenUpdate,
        MessageStored,
        MessageUpdated,
        BranchChanged,
        Delta,
        TurnDone,
        ErrorEvent,
        SessionCreated,
        SessionUpdated,
        SessionDeleted,
    )
}


def _layer_part(event: ServerEvent) -> dict[str, Any]:
    data = {k: getattr(event, k) for k in event.__dataclass_fields__ if k != "type"}
    return {"event_type": event.type, "data": data}


def event_to_layer(event: ServerEvent) -> dict[str, Any]:
    """A channel-layer message carrying the event (msgpack-safe: plain dict)."""
    return {"type": "session.event", **_layer_part(event)}


def events_to_layer(events: Sequence[ServerEvent]) -> dict[str, Any]:
    """One channel-layer message carrying several events, in order: events that are ready
    together cost one trip through the layer instead of one each (every socket still gets
    each event as its own frame)."""
    if len(events) == 1:
        return event_to_layer(events[0])
    return {"type": "session.events", "events": [_layer_part(event) for event in events]}


def event_from_layer(message: dict[str, Any]) -> ServerEvent:
    cls = _BY_TYPE[message["event_type"]]
    return cls(**message["data"])


def events_from_layer(message: dict[str, Any]) -> list[ServerEvent]:
    """The events of a ``session.events`` message, in the order they were published."""
    return [event_from_layer(part) for part in message["events"]]
