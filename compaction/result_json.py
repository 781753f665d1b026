"""A core result as JSON, and back (a prepared compaction is stored between processes)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import condense as core
from condense.types import ToolCall


def message_to_json(m: core.Message) -> dict[str, Any]:
    return {
        "role": m.role,
        "content": m.content,
        "toolCalls": [[c.id, c.name, c.arguments] for c in m.tool_calls],
        "toolCallId": m.tool_call_id,
        "id": m.id,
        "isSummary": m.is_summary,
        "pinned": m.pinned,
    }


def message_from_json(data: dict[str, Any]) -> core.Message:
    return core.Message(
        role=core.core_role(str(data["role"])),
        content=str(data.get("content") or ""),
        tool_calls=tuple(ToolCall(str(i), str(n), str(a)) for i, n, a in data.get("toolCalls", ())),
        tool_call_id=data.get("toolCallId"),
        id=data.get("id"),
        is_summary=bool(data.get("isSummary")),
        pinned=bool(data.get("pinned")),
    )


def _ids(data: dict[str, Any], key: str) -> tuple[int, ...]:
    return tuple(int(i) for i in data.get(key, ()))


def result_to_json(r: core.CompactionResult) -> dict[str, Any]:
    """What applying it needs (the span and the index entries are not kept)."""
    summary_at = next((i for i, m in enumerate(r.messages) if m is r.summary_message), None)
    return {
        "status": r.status,
        "messages": [message_to_json(m) for m in r.messages],
        "summaryAt": summary_at,
        "tokensBefore": r.tokens_before,
        "tokensAfter": r.tokens_after,
        "summaryText": r.summary_text,
        "summarizedIds": list(r.summarized_ids),
        "prunedIds": list(r.pruned_ids),
        "requests": [{**asdict(q), "prompt": ""} for q in r.requests],
        "language": r.language,
        "anchoredIds": list(r.anchored_ids),
        "pinnedIds": list(r.pinned_ids),
        "foldedSummaryIds": list(r.folded_summary_ids),
        "regrounded": r.regrounded,
        "inputTokens": r.input_tokens,
        "outputTokens": r.output_tokens,
    }


def result_from_json(data: dict[str, Any]) -> core.CompactionResult:
    messages = tuple(message_from_json(m) for m in data.get("messages", ()))
    at = data.get("summaryAt")
    return core.CompactionResult(
        status=str(data["status"]),
        messages=messages,
        tokens_before=int(data.get("tokensBefore", 0)),
        tokens_after=int(data.get("tokensAfter", 0)),
        summary_message=messages[at] if at is not None else None,
        summary_text=data.get("summaryText"),
        summarized_ids=_ids(data, "summarizedIds"),
        pruned_ids=_ids(data, "prunedIds"),
        requests=tuple(core.SummaryRequest(**q) for q in data.get("requests", ())),
        language=data.get("language", "en"),
        anchored_ids=_ids(data, "anchoredIds"),
        pinned_ids=_ids(data, "pinnedIds"),
        folded_summary_ids=_ids(data, "foldedSummaryIds"),
        regrounded=bool(data.get("regrounded", False)),
        input_tokens=int(data.get("inputTokens", 0)),
        output_tokens=int(data.get("outputTokens", 0)),
    )
