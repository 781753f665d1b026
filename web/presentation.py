"""What the chat page shows, built from the one JSON shape of a message.

The page renders stored rows through ``message_to_json`` and the live socket
receives the same dicts in its events, so both go through ``message_view`` and
the same template partials: a bubble looks identical whether it was loaded with
the page or arrived a second ago (DESIGN 7). Pure presentation: no queries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.utils.translation import gettext_lazy

from agents.event_records import EventRecord
from agents.events import MeterReading
from agents.models import SYSTEM_TYPE_TURN, ModelChannel
from agents.reasons import TurnFailure, user_text
from compaction.trigger import pause_label

MessageKind = Literal["user", "assistant", "tool", "summary", "event", "system"]
MeterState = Literal["ok", "warn", "danger"]

DANGER_PERCENT = 90


@dataclass(frozen=True, slots=True)
class ToolCallView:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class EventView:
    """A stored system event (seed §8.3): a compaction that finished or failed, or a chat
    turn that failed or was stopped (``is_turn``: its bubble offers Retry)."""

    system_type: str
    status: Literal["done", "failed", "stopped", "other"]
    removed_count: int
    saved_percent: int
    tokens_before: int | None
    tokens_after: int | None
    error: str
    reason: str
    summary_message_id: int | None
    http_status: str = ""  # a failed turn: the provider's status, its words, the channel
    detail: str = ""
    channel: str = ""
    model: str = ""
    # a compaction's audit record (its bubble's Undo names it), and whether it was undone
    compaction_id: int | None = None
    undone: bool = False

    @property
    def is_turn(self) -> bool:
        return self.system_type == SYSTEM_TYPE_TURN

    @property
    def undoable(self) -> bool:
        """A done compaction with a record, not undone: its bubble offers Undo (the page
        shows it on the newest such bubble only; the server refuses any but the latest)."""
        return (
            not self.is_turn
            and self.status == "done"
            and self.compaction_id is not None
            and not self.undone
        )

    @property
    def error_text(self) -> str:
        """The failure in the page's language (rendered under the active translation)."""
        if self.is_turn and self.status == "failed":
            failure = TurnFailure(
                self.reason or "internal_error",
                self.http_status,
                self.detail,
                self.channel,
                self.model,
            )
            return failure.user_text()
        return user_text(self.reason, self.error)


@dataclass(frozen=True, slots=True)
class AttachmentView:
    name: str
    path: str
    size: int
    type: str


def _attachment_views(metadata: dict[str, Any]) -> tuple[AttachmentView, ...]:
    return tuple(
        AttachmentView(
            str(a.get("name") or ""),
            str(a.get("path") or ""),
            _int(a.get("size")),
            str(a.get("type") or ""),
        )
        for a in metadata.get("attachments") or ()
        if isinstance(a, dict)
    )


@dataclass(frozen=True, slots=True)
class OtherVersionView:
    """A version set aside, shown in the full history under the fork's switch."""

    version: int
    messages: tuple[MessageView, ...]


@dataclass(frozen=True, slots=True)
class BranchView:
    """A fork's switch, "‹ 2 / 3 ›" (issue 26 item 1), and in the full history the
    versions set aside."""

    fork_id: int
    kind: str
    version: int
    versions: int
    other_versions: tuple[OtherVersionView, ...] = ()

    @property
    def previous(self) -> int | None:
        return self.version - 1 if self.version > 1 else None

    @property
    def next(self) -> int | None:
        return self.version + 1 if self.version < self.versions else None


def branch_view(data: Any) -> BranchView | None:
    if not isinstance(data, dict):
        return None
    try:
        head = (int(data["forkId"]), str(data["kind"]), int(data["version"]))
        versions = int(data["versions"])
    except (KeyError, TypeError, ValueError):
        return None
    others = tuple(
        OtherVersionView(
            _int(v.get("version")), tuple(message_view(m) for m in v.get("messages") or ())
        )
        for v in data.get("otherVersions") or ()
        if isinstance(v, dict)
    )
    return BranchView(*head, versions, others)


@dataclass(frozen=True, slots=True)
class MessageView:
    id: int | None
    kind: MessageKind
    role: str
    content: str
    created_at: datetime | None
    compacted: bool
    pruned: bool
    tool_calls: tuple[ToolCallView, ...] = ()
    tool_call_id: str = ""
    tool_name: str = ""
    tool_is_error: bool = False
    event: EventView | None = None
    queued: bool = False  # sent while a turn ran: a chip under it until a turn answers it
    stopped: bool = False  # an answer (or a tool call's result) cut by a stop
    truncated: bool = False  # a socket event's preview of a large message (socket framing)
    pinned: bool = False  # never summarized away (issue 17 item 2): a badge, Unpin in its menu
    # issue 26 item 1: the switches this message carries — its own versions (an edit) and
    # the answers to it (a regenerate)
    branch: BranchView | None = None
    answers: BranchView | None = None
    # issue 26 item 4: the files the user attached (name, path, size, type)
    attachments: tuple[AttachmentView, ...] = ()

    @property
    def has_menu(self) -> bool:
        """A stored user, assistant or tool message offers the "⋯" menu (pin, compact up
        to here)."""
        return self.id is not None and self.kind in {"user", "assistant", "tool"}

    @property
    def queued_dom_id(self) -> str:
        return f"queued-{self.id}" if self.id is not None else ""

    @property
    def dom_id(self) -> str:
        return f"msg-{self.id}" if self.id is not None else ""


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _optional_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def saved_percent(tokens_before: int | None, tokens_after: int | None) -> int:
    if not tokens_before or tokens_after is None or tokens_before <= 0:
        return 0
    return max(0, round(100 * (tokens_before - tokens_after) / tokens_before))


_SHOWN_STATUSES: dict[str, Literal["done", "failed", "stopped"]] = {
    "done": "done",
    "failed": "failed",
    "stopped": "stopped",
}


def event_view(metadata: dict[str, Any], *, fallback_error: str = "") -> EventView:
    """An event record's metadata as the page shows it (``agents.event_records``: one
    shape, written and read by the same code)."""
    record = EventRecord.from_metadata(metadata, fallback_error=fallback_error)
    return EventView(
        system_type=record.system_type,
        status=_SHOWN_STATUSES.get(record.status, "other"),
        removed_count=record.removed_count,
        saved_percent=saved_percent(record.tokens_before, record.tokens_after),
        tokens_before=record.tokens_before,
        tokens_after=record.tokens_after,
        error=record.error,
        reason=record.reason,
        summary_message_id=record.summary_message_id,
        http_status=record.http_status,
        detail=record.detail,
        channel=record.channel,
        model=record.model,
        compaction_id=record.compaction_id,
        undone=record.undone,
    )


def _pretty_arguments(arguments: Any) -> str:
    if not isinstance(arguments, str):
        return json.dumps(arguments, ensure_ascii=False, indent=2)
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False, indent=2)
    except (ValueError, TypeError):
        return arguments


def _created(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def message_view(data: dict[str, Any]) -> MessageView:
    """A message dict in ``agents.message_format.message_to_json`` shape → what to show."""
    role = str(data.get("role") or "")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        metadata = {}
    if role == "system" and metadata.get("systemType"):
        kind: MessageKind = "event"
    elif data.get("is_compaction_summary"):
        kind = "summary"
    elif role in {"user", "assistant", "tool"}:
        kind = role  # type: ignore[assignment]
    else:
        kind = "system"
    calls = tuple(
        ToolCallView(
            id=str(c.get("id", "")),
            name=str(c.get("name", "")),
            arguments=_pretty_arguments(c.get("arguments", "")),
        )
        for c in (data.get("tool_calls") or ())
        if isinstance(c, dict)
    )
    return MessageView(
        id=_optional_int(data.get("id")),
        kind=kind,
        role=role,
        content=str(data.get("content") or ""),
        created_at=_created(data.get("created_at")),
        compacted=bool(data.get("compacted_at")),
        pruned=bool(data.get("pruned")),
        tool_calls=calls,
        tool_call_id=str(data.get("tool_call_id") or ""),
        tool_name=str(metadata.get("toolName") or ""),
        tool_is_error=bool(metadata.get("isError")),
        queued=bool(data.get("queued")),
        stopped=bool(metadata.get("stopped")),
        truncated=bool(data.get("truncated")),
        pinned=bool(data.get("pinned")),
        branch=branch_view(data.get("branch")),
        answers=branch_view(data.get("answers")),
        attachments=_attachment_views(metadata),
        event=event_view(metadata, fallback_error=str(data.get("content") or ""))
        if kind == "event"
        else None,
    )


# What fills the context (issue 17 item 11), in the order the panel lists it: the keys of
# ``MeterReading.breakdown`` (``agents.context_breakdown.ContextBreakdown.to_json``).
CONTEXT_PARTS: tuple[tuple[str, Any], ...] = (
    ("systemPrompt", gettext_lazy("System prompt")),
    ("toolDefinitions", gettext_lazy("Tool definitions")),
    ("pins", gettext_lazy("Pinned messages")),
    ("summary", gettext_lazy("Summary")),
    ("messages", gettext_lazy("Messages")),
    ("free", gettext_lazy("Free")),
)


@dataclass(frozen=True, slots=True)
class ContextPart:
    """One row of the context panel: a part's tokens and its share of the model's window."""

    key: str
    label: str
    tokens: int
    window: int

    @property
    def percent(self) -> float:
        return 100.0 * self.tokens / self.window if self.window else 0.0

    @property
    def tokens_display(self) -> str:
        return f"{self.tokens:,}"

    @property
    def percent_display(self) -> str:
        return f"{self.percent:.1f}"

    @property
    def bar_css(self) -> str:
        """Its width in the panel's stacked bar."""
        return f"{min(100.0, self.percent):.2f}%"


@dataclass(frozen=True, slots=True)
class MeterView:
    """The token bar and status line (seed §8.1) of one meter reading (a ``TokenUpdate``
    is one too)."""

    reading: MeterReading

    @property
    def used(self) -> int:
        return max(0, self.reading.used_tokens)

    @property
    def max(self) -> int:
        return max(0, self.reading.max_tokens)

    @property
    def percent(self) -> float:
        return round(100.0 * self.used / self.max, 1) if self.max else 0.0

    @property
    def threshold_percent(self) -> int:
        return self.reading.threshold_percent

    @property
    def estimated(self) -> bool:
        return self.reading.estimated

    @property
    def compaction_count(self) -> int:
        return self.reading.compaction_count

    @property
    def compacting(self) -> bool:
        return self.reading.compacting

    @property
    def paused_reason(self) -> str:
        return self.reading.paused_reason

    @property
    def paused_label(self) -> str:
        return pause_label(self.paused_reason)

    @property
    def state(self) -> MeterState:
        """Green below the threshold, orange from it to 90%, red above 90% (exact, not
        rounded). Red wins over green: with a threshold of 95% the window is nearly full
        at 92% all the same."""
        if not self.max:
            return "ok"
        share = 100 * self.used
        if share > DANGER_PERCENT * self.max:
            return "danger"
        if not self.over_threshold:  # the percentage or the agent's token cap, whichever first
            return "ok"
        return "warn"

    @property
    def fill_css(self) -> str:
        return f"{min(100.0, max(0.0, self.percent)):.2f}%"

    @property
    def threshold_css(self) -> str:
        """Where the marker stands: where compaction fires — a token cap below the
        percentage moves it (issue 26 item 8: with a 1,500-token cap the bar sat green under
        its 65% marker while compaction fired at 1,733)."""
        if not self.max:
            return f"{self.threshold_percent}%"
        return f"{round(min(100.0, 100.0 * self.reading.threshold_tokens / self.max), 2):g}%"

    @property
    def used_display(self) -> str:
        return f"{self.used:,}"

    @property
    def max_display(self) -> str:
        return f"{self.max:,}"

    @property
    def breakdown_display(self) -> dict[str, str]:
        """The hover breakdown's figures, grouped like the status line's (12,345)."""
        return {
            "input": f"{self.reading.input_tokens:,}",
            "output": f"{self.reading.output_tokens:,}",
            "tool": f"{self.reading.tool_tokens:,}",
            "calls": f"{self.reading.api_calls:,}",
        }

    @property
    def percent_display(self) -> str:
        return f"{self.percent:.0f}"

    @property
    def over_threshold(self) -> bool:
        """At or past where automatic compaction fires (the percentage or the agent's cap)."""
        return self.reading.over_threshold

    @property
    def context_parts(self) -> tuple[ContextPart, ...]:
        """System prompt, tool definitions, pins, summary, messages and free, in tokens of
        the bar's own count; empty when the reading carries no breakdown."""
        breakdown = self.reading.breakdown
        if breakdown is None:
            return ()
        return tuple(
            ContextPart(key, str(label), max(0, int(breakdown.get(key, 0))), self.max)
            for key, label in CONTEXT_PARTS
        )

    @property
    def pins_tokens(self) -> int:
        """What the pinned messages cost (0 without pins, or without a breakdown)."""
        breakdown = self.reading.breakdown or {}
        return max(0, int(breakdown.get("pins", 0)))

    @property
    def pins_display(self) -> str:
        return f"{self.pins_tokens:,}"

    @property
    def over_window(self) -> bool:
        """The context is larger than the model's window: the next request will most likely
        be refused (automatic compaction paused, or a message too large to compact)."""
        return self.max > 0 and self.used > self.max


def channel_label(channel: ModelChannel | None) -> str:
    """A model as the page names what it waits for: "model (channel)"."""
    if channel is None:
        return ""
    return f"{channel.model} ({channel.name})" if channel.name else channel.model


@dataclass(frozen=True, slots=True)
class AgentName:
    name: str


@dataclass(frozen=True, slots=True)
class ChatListEntry:
    """A chat of the chat list as a socket event announces it: the fields of a
    ``ChatSession`` that ``chat/partials/session_item.html`` reads."""

    pk: str
    title: str
    agent: AgentName
    updated_at: datetime | None = None
    compaction_count: int = 0
