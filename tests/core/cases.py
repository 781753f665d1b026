"""Reading golden cases: JSON messages and policies into core values.

Golden files keep long contents readable with a small notation: a content is a
string, ``{"repeat": [text, n]}`` (``text * n``), or a list of those, joined.
"""

from __future__ import annotations

from typing import Any

from condense import CompactionPolicy, Message, ToolCall

Text = str | dict[str, Any] | list[Any]


def expand(value: Text | None) -> str:
    """The string a golden content notation stands for."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(expand(part) for part in value)
    if set(value) == {"repeat"}:
        text, count = value["repeat"]
        return str(text) * int(count)
    raise ValueError(f"unknown content notation: {value!r}")


def message_from_json(data: dict[str, Any]) -> Message:
    calls = tuple(
        ToolCall(id=c["id"], name=c.get("name", "tool"), arguments=expand(c.get("arguments", "{}")))
        for c in data.get("tool_calls", ())
    )
    return Message(
        role=data["role"],
        content=expand(data.get("content", "")),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        id=data.get("id"),
        is_summary=bool(data.get("is_summary", False)),
    )


def policy_from_json(data: dict[str, Any]) -> CompactionPolicy:
    return CompactionPolicy(**data)


def transcript_messages(raw: list[dict[str, Any]]) -> list[Message]:
    """A normalized OpenAI-format transcript as core messages, numbered from 1.

    Tool calls come flat (``{id, name, arguments}``) or nested under ``function``.
    """
    out = []
    for number, data in enumerate(raw, start=1):
        calls = []
        for call in data.get("tool_calls") or ():
            function = call.get("function") or call
            calls.append(ToolCall(call["id"], function["name"], function.get("arguments") or ""))
        out.append(
            Message(
                role=data["role"],
                content=data.get("content") or "",
                tool_calls=tuple(calls),
                tool_call_id=data.get("tool_call_id"),
                id=number,
            )
        )
    return out
