"""Phase 3 input: the middle as ``[ROLE] content`` text, long contents cut head + tail."""

from __future__ import annotations

from collections.abc import Sequence

from condense.types import Message

_LABELS = {"system": "[SYSTEM] ", "user": "[USER] ", "assistant": "[ASSISTANT] "}


def truncate_middle(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    cut = len(text) - head - tail
    return f"{text[:head]}\n...[truncated {cut} chars]...\n{text[len(text) - tail :]}"


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
    append = pieces.append
    keep = head + tail
    for m, text in zip(messages, contents, strict=True):
        role = m.role
        if role == "tool":  # one copy of a long output, not three
            label = f"[TOOL RESULT {m.tool_call_id}] " if m.tool_call_id else "[TOOL] "
            if len(text) > keep:
                cut = len(text) - keep
                end = text[len(text) - tail :]  # not text[-tail:]: that is all of it for 0
                append(f"{label}{text[:head]}\n...[truncated {cut} chars]...\n{end}")
            else:
                append(label + text)
            continue
        if len(text) > keep:
            cut, end = len(text) - keep, text[len(text) - tail :]
            text = f"{text[:head]}\n...[truncated {cut} chars]...\n{end}"
        piece = (_LABELS.get(role) or f"[{role.upper()}] ") + text
        for c in m.tool_calls:
            args = c.arguments or ""
            if len(args) > keep:
                args = truncate_middle(args, head, tail)
            piece = f"{piece}\n[TOOL CALL {c.id}] {c.name}({args})"
        append(piece)
    return pieces, piece_costs(pieces, chars_per_token)


def piece_costs(pieces: Sequence[str], chars_per_token: int) -> list[int]:
    """``conservative_tokens(piece) + 1`` of each piece, inline (no call per piece): an
    ASCII piece's length is all it takes; a wider one's UTF-8 length finds its CJK
    characters, as ``conservative_tokens`` does."""
    cpt = chars_per_token
    return [
        len(piece) // cpt + 2
        if piece.isascii()
        else (wide := (len(piece.encode("utf-8", "surrogatepass")) - len(piece)) // 2)
        + max(0, len(piece) - wide) // cpt
        + 2
        for piece in pieces
    ]
