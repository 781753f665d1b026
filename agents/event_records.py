"""The stored event record: a compaction's bubble or a turn's record (issue 23 item 6).

An event record is a ``system`` message the model never sees; its ``metadata`` says what
happened. ``EventRecord`` is that metadata's one shape: the services write it with
``to_metadata`` and the pages read it back with ``from_metadata`` — one spelling (the
wire's camelCase), one set of statuses."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, cast

EventStatus = Literal["done", "failed", "stopped", "interrupted", "skipped", "other"]
_STATUSES = frozenset(("done", "failed", "stopped", "interrupted", "skipped"))

# field name → metadata key, for the fields whose key is not simply camelCase of the name
_KEYS = {"system_type": "systemType", "http_status": "httpStatus"}


def _key(name: str) -> str:
    if name in _KEYS:
        return _KEYS[name]
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True, slots=True)
class EventRecord:
    system_type: str
    status: EventStatus
    reason: str = ""
    error: str = ""
    # a compaction's
    removed_count: int = 0
    pruned_count: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None
    saved_percent: int = 0
    language: str = ""
    requests: int = 0
    anchored_count: int = 0
    folded_summaries: int = 0
    regrounded: bool = False
    summary_message_id: int | None = None
    compaction_id: int | None = None
    undone: bool = False
    # an interrupted turn's: how many times it was run again by itself before
    attempt: int = 0
    # a failed turn's: the provider's status and words, the channel to check
    http_status: str = ""
    detail: str = ""
    channel: str = ""
    model: str = ""

    def to_metadata(self) -> dict[str, Any]:
        """The stored metadata (defaults left out, so a record stays small)."""
        data: dict[str, Any] = {"systemType": self.system_type, "status": self.status}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in {"system_type", "status"} or value == f.default:
                continue
            data[_key(f.name)] = value
        return data

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any], *, fallback_error: str = "") -> EventRecord:
        """Read stored metadata; a value of the wrong type reads as its default."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = metadata.get(_key(f.name))
            if raw is None or f.name in {"system_type", "status"}:
                continue
            if f.name in _BOOLS:
                values[f.name] = bool(raw)
            elif f.name in _OPTIONAL_INTS:
                values[f.name] = _int(raw)
            elif f.name in _INTS:
                values[f.name] = _int(raw) or 0
            else:
                values[f.name] = str(raw)
        status = str(metadata.get("status") or "")
        return cls(
            system_type=str(metadata.get("systemType") or ""),
            status=cast(EventStatus, status if status in _STATUSES else "other"),
            **{"error": fallback_error, **values},
        )


_BOOLS = frozenset(("regrounded", "undone"))
_OPTIONAL_INTS = frozenset(("tokens_before", "tokens_after", "summary_message_id", "compaction_id"))
_INTS = frozenset(
    (
        "removed_count",
        "pruned_count",
        "saved_percent",
        "requests",
        "anchored_count",
        "folded_summaries",
    )
)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
