"""Phase 3 input: the middle as ``[ROLE] content`` text, long contents cut head + tail."""

from __future__ import annotations

from collections.abc import Sequence

from compaction.core.types import Message


def truncate_middle(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    cut = len(text) - head - tail
    return f"{text[:head]}\n...[truncated {cut} chars]...\n{text[-tail:]}"


def serialize_message(message: Message, *, head: int = 4000, tail: int = 1500) -> str:
    role = message.role.upper()
    if message.role == "tool":
        label = f"[TOOL RESULT {message.tool_call_id}]" if message.tool_call_id else "[TOOL]"
        return f"{label} {truncate_middle(message.content, head, tail)}"
    parts = [f"[{role}] {truncate_middle(message.content, head, tail)}"]
    for call in message.tool_calls:
        args = truncate_middle(call.arguments or "", head, tail)
        parts.append(f"[TOOL CALL {call.id}] {call.name}({args})")
    return "\n".join(parts)


def serialize_for_summary(
    messages: Sequence[Message], *, head: int = 4000, tail: int = 1500
) -> str:
    return "\n\n".join(serialize_message(m, head=head, tail=tail) for m in messages)
