"""The one JSON shape of a stored message (REST, WebSocket events, export_session)
and the parser of OpenAI-format message lists (import_session)."""

from __future__ import annotations

import json
from typing import Any

from agents.models import Message, Role
from condense.pruning import PRUNED_TOOL_PLACEHOLDER


def message_to_json(message: Message, *, view: str = "full") -> dict[str, Any]:
    """``view='compacted'`` serves a pruned tool output as its placeholder (DESIGN 2)."""
    content = message.content
    if view == "compacted" and message.pruned_at is not None:
        content = PRUNED_TOOL_PLACEHOLDER
    data: dict[str, Any] = {
        "id": message.pk,
        "role": message.role,
        "content": content,
        "position": message.position,
        "created_at": message.created_at.isoformat() if message.created_at else None,
        "compacted_at": message.compacted_at.isoformat() if message.compacted_at else None,
        "compacted_into": message.compacted_into_id,
        "is_compaction_summary": message.is_compaction_summary,
        "pruned": message.pruned_at is not None,
        "pinned": message.pinned,
        "metadata": message.metadata or {},
    }
    if message.tool_calls:
        data["tool_calls"] = list(message.tool_calls)
    if message.tool_call_id:
        data["tool_call_id"] = message.tool_call_id
    if message.queued_at is not None:  # waiting for the running turn (CONTRACT §5)
        data["queued"] = True
    return data


class MessageFormatError(ValueError):
    """An imported message list is not valid; says which item and why."""


def _parse_tool_call(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise MessageFormatError(f"{where}: a tool call must be an object")
    nested = raw.get("function")
    fn: dict[str, Any] = nested if isinstance(nested, dict) else raw
    call_id, name, arguments = raw.get("id"), fn.get("name"), fn.get("arguments", "{}")
    if not isinstance(call_id, str) or not call_id:
        raise MessageFormatError(f"{where}: tool call needs a string 'id'")
    if not isinstance(name, str) or not name:
        raise MessageFormatError(f"{where}: tool call needs a string 'name'")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "name": name, "arguments": arguments}


def _content_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text parts
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    raise MessageFormatError(f"{where}: 'content' must be a string, a list of parts or null")


def parse_openai_messages(data: Any) -> list[dict[str, Any]]:
    """Validate a JSON list of OpenAI-format messages into rows for messages_bulk_append."""
    if not isinstance(data, list):
        raise MessageFormatError("expected a JSON list of messages")
    rows: list[dict[str, Any]] = []
    for index, raw in enumerate(data):
        where = f"message {index}"
        if not isinstance(raw, dict):
            raise MessageFormatError(f"{where}: must be an object")
        role = raw.get("role")
        if role not in Role.values:
            raise MessageFormatError(
                f"{where}: unknown role {role!r}; expected one of {', '.join(Role.values)}"
            )
        row: dict[str, Any] = {"role": role, "content": _content_text(raw.get("content"), where)}
        calls = raw.get("tool_calls") or []
        if calls:
            if role != Role.ASSISTANT or not isinstance(calls, list):
                raise MessageFormatError(
                    f"{where}: only assistant messages carry a tool_calls list"
                )
            row["tool_calls"] = [
                _parse_tool_call(c, f"{where} tool call {i}") for i, c in enumerate(calls)
            ]
        if role == Role.TOOL:
            call_id = raw.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise MessageFormatError(f"{where}: a tool message needs a 'tool_call_id'")
            row["tool_call_id"] = call_id
        rows.append(row)
    return rows
