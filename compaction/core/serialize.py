"""Phase 3 input: the middle as ``[ROLE] content`` text, long contents cut head + tail."""

from __future__ import annotations

from collections.abc import Sequence

from compaction.core.tokens import conservative_tokens
from compaction.core.types import Message

_LABELS = {"system": "[SYSTEM] ", "user": "[USER] ", "assistant": "[ASSISTANT] "}


def truncate_middle(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    cut = len(text) - head - tail
    return f"{text[:head]}\n...[truncated {cut} chars]...\n{text[-tail:]}"


def serialize_message(message: Message, *, head: int = 4000, tail: int = 1500) -> str:
    if message.role == "tool":
        label = f"[TOOL RESULT {message.tool_call_id}]" if message.tool_call_id else "[TOOL]"
        return f"{label} {truncate_middle(message.content, head, tail)}"
    text = f"[{message.role.upper()}] {truncate_middle(message.content, head, tail)}"
    if not message.tool_calls:
        return text
    parts = [text]
    for call in message.tool_calls:
        args = truncate_middle(call.arguments or "", head, tail)
        parts.append(f"[TOOL CALL {call.id}] {call.name}({args})")
    return "\n".join(parts)


def serialize_for_summary(
    messages: Sequence[Message], *, head: int = 4000, tail: int = 1500
) -> str:
    return "\n\n".join(serialize_message(m, head=head, tail=tail) for m in messages)


def serialize_pieces(
    messages: Sequence[Message],
    contents: Sequence[str],
    *,
    head: int,
    tail: int,
    chars_per_token: int,
) -> tuple[list[str], list[int]]:
    """``serialize_message`` of each message (with ``contents`` for their content) and each
    piece's conservative token count + 1: the one pass over a middle of 100k messages,
    kept free of per-message calls."""
    pieces: list[str] = []
    costs: list[int] = []
    keep = head + tail
    for m, text in zip(messages, contents, strict=True):
        if m.role == "tool":  # one copy of a long output, not three
            label = f"[TOOL RESULT {m.tool_call_id}] " if m.tool_call_id else "[TOOL] "
            if len(text) > keep:
                cut = len(text) - keep
                piece = f"{label}{text[:head]}\n...[truncated {cut} chars]...\n{text[-tail:]}"
            else:
                piece = label + text
        else:
            if len(text) > keep:
                text = f"{text[:head]}\n...[truncated {len(text) - keep} chars]...\n{text[-tail:]}"
            piece = (_LABELS.get(m.role) or f"[{m.role.upper()}] ") + text
            for c in m.tool_calls:
                args = c.arguments or ""
                if len(args) > keep:
                    args = truncate_middle(args, head, tail)
                piece = f"{piece}\n[TOOL CALL {c.id}] {c.name}({args})"
        pieces.append(piece)
        if piece.isascii():
            costs.append(len(piece) // chars_per_token + 2)
        else:
            costs.append(conservative_tokens(piece, chars_per_token) + 1)
    return pieces, costs
