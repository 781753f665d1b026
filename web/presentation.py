"""What the chat page shows, built from the one JSON shape of a message.

The page renders stored rows through ``message_to_json`` and the live socket
receives the same dicts in its events, so both go through ``message_view`` and
the same template partials: a bubble looks identical whether it was loaded with
the page or arrived a second ago (DESIGN 7). Pure presentation: no queries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.services import SYSTEM_TYPE_COMPACTION
from compaction.trigger import pause_label

MessageKind = Literal["user", "assistant", "tool", "summary", "event", "system"]
MeterState = Literal["ok", "warn", "danger"]

DANGER_PERCENT = 90


# What the page says for a failure ``reason``. The stored ``error`` is written for programs
# and logs (the compaction service's are "中文 (English)", the model adapters' English), so a
# page in either language would show the other one; the reason says the same in its own.
COMPACTION_FAILURES: dict[str, Promise] = {
    "no_auxiliary_model": _("No auxiliary model is configured"),
    "nothing_to_compact": _("There is nothing to compact yet"),
    "oversized_message": _("One message is too large to compact; consider splitting it"),
    "system_prompt_too_long": _(
        "The system prompt alone exceeds the threshold; shorten it on the agent's page"
    ),
    "no_gain": _("A summary would not save any tokens"),
    "summary_too_short": _("The summary came back empty or unusually short"),
    "history_changed": _("The history changed during the compaction; try again"),
    "storage_error": _("The summary could not be stored"),
}
# The model adapters' reasons (llm.errors); their text is "<head> (HTTP n): <detail>",
# and the detail is the provider's own words, shown as they are.
PROVIDER_FAILURES: dict[str, Promise] = {
    "timeout": _("The model did not answer in time"),
    "rate_limited": _("The model provider is rate limiting requests"),
    "upstream_error": _("The model provider failed"),
    "invalid_response": _("The model provider sent a response that could not be read"),
    "connection_error": _("Could not connect to the model provider"),
    "auth_error": _("The model provider refused the API key"),
    "bad_request": _("The model provider rejected the request"),
}
_HTTP_STATUS = re.compile(r"\s*\(HTTP (\d{3})\)")


def failure_text(reason: str | None, error: str) -> str:
    """``error`` in the active language, by its ``reason``; an unknown reason keeps ``error``."""
    known = COMPACTION_FAILURES.get(reason or "")
    if known is not None:
        return str(known)
    head = PROVIDER_FAILURES.get(reason or "")
    if head is None:
        return error
    status = _HTTP_STATUS.search(error)
    _sentence, colon, detail = _HTTP_STATUS.sub("", error).partition(": ")
    text = str(head)
    if status:
        text = gettext("%(what)s (HTTP %(status)s)") % {"what": text, "status": status.group(1)}
    if colon and detail.strip():
        text = gettext("%(what)s: %(detail)s") % {"what": text, "detail": detail.strip()}
    return text


@dataclass(frozen=True, slots=True)
class ToolCallView:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class EventView:
    """A stored system event (seed §8.3): a compaction that finished or failed."""

    system_type: str
    status: Literal["done", "failed", "other"]
    removed_count: int
    saved_percent: int
    tokens_before: int | None
    tokens_after: int | None
    error: str
    reason: str
    summary_message_id: int | None

    @property
    def error_text(self) -> str:
        """The failure in the page's language (rendered under the active translation)."""
        return failure_text(self.reason, self.error)


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


def _first(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if data.get(key) is not None:
            return data[key]
    return None


def saved_percent(tokens_before: int | None, tokens_after: int | None) -> int:
    if not tokens_before or tokens_after is None or tokens_before <= 0:
        return 0
    return max(0, round(100 * (tokens_before - tokens_after) / tokens_before))


def event_view(
    metadata: dict[str, Any], *, fallback_error: str = "", status: str | None = None
) -> EventView:
    """Read an event record's metadata; camelCase (the wire's) or snake_case keys."""
    system_type = str(metadata.get("systemType") or "")
    raw_status = str(status or metadata.get("status") or metadata.get("event") or "").lower()
    error = str(_first(metadata, "error", "errorMessage") or fallback_error or "")
    if raw_status in {"failed", "compaction_failed", "error"} or (not raw_status and error):
        resolved: Literal["done", "failed", "other"] = "failed"
    elif raw_status in {"done", "compaction_done", "ok", "success"} or (
        not raw_status and system_type == SYSTEM_TYPE_COMPACTION
    ):
        resolved = "done"
    else:
        resolved = "other"
    before = _optional_int(_first(metadata, "tokensBefore", "tokens_before"))
    after = _optional_int(_first(metadata, "tokensAfter", "tokens_after"))
    return EventView(
        system_type=system_type,
        status=resolved,
        removed_count=_int(_first(metadata, "removedCount", "removed_count")),
        saved_percent=saved_percent(before, after),
        tokens_before=before,
        tokens_after=after,
        error=error,
        reason=str(metadata.get("reason") or ""),
        summary_message_id=_optional_int(
            _first(metadata, "summaryMessageId", "summary_message_id")
        ),
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
        event=event_view(metadata, fallback_error=str(data.get("content") or ""))
        if kind == "event"
        else None,
    )


class MeterFigures(Protocol):
    """What ``agents.meter.MeterReading`` and ``agents.events.TokenUpdate`` share."""

    used_tokens: int
    max_tokens: int
    threshold_percent: int
    estimated: bool
    input_tokens: int
    output_tokens: int
    api_calls: int
    compaction_count: int
    tool_tokens: int
    compacting: bool
    paused_reason: str


@dataclass(frozen=True, slots=True)
class MeterView:
    """The token bar and status line (seed §8.1)."""

    used: int
    max: int
    threshold_percent: int
    percent: float
    estimated: bool
    input_tokens: int
    output_tokens: int
    tool_tokens: int
    api_calls: int
    compaction_count: int
    compacting: bool
    paused_reason: str = ""

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
        if share < self.threshold_percent * self.max:
            return "ok"
        return "warn"

    @property
    def fill_css(self) -> str:
        return f"{min(100.0, max(0.0, self.percent)):.2f}%"

    @property
    def threshold_css(self) -> str:
        return f"{self.threshold_percent}%"

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
            "input": f"{self.input_tokens:,}",
            "output": f"{self.output_tokens:,}",
            "tool": f"{self.tool_tokens:,}",
            "calls": f"{self.api_calls:,}",
        }

    @property
    def percent_display(self) -> str:
        return f"{self.percent:.0f}"


def meter_view(figures: MeterFigures) -> MeterView:
    used, maximum = max(0, figures.used_tokens), max(0, figures.max_tokens)
    percent = round(100.0 * used / maximum, 1) if maximum else 0.0
    return MeterView(
        used=used,
        max=maximum,
        threshold_percent=figures.threshold_percent,
        percent=percent,
        estimated=figures.estimated,
        input_tokens=figures.input_tokens,
        output_tokens=figures.output_tokens,
        tool_tokens=figures.tool_tokens,
        api_calls=figures.api_calls,
        compaction_count=figures.compaction_count,
        compacting=figures.compacting,
        paused_reason=figures.paused_reason,
    )
