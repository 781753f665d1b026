"""Phase 4 and DESIGN 4: a message list in which every tool call has its result.

Both providers reject a tool call without its result right after it, and a
result without its call. ``repair_tool_pairing`` enforces that on any list
(the compacted context, an imported session, an interrupted turn).
"""

from __future__ import annotations

from collections.abc import Sequence

from condense.types import Message

ORPHAN_CALL_PLACEHOLDER = "[结果来自已压缩的历史 -- 见上方摘要]"


def repair_tool_pairing(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """Return (repaired list, dropped messages).

    Each assistant message with tool calls keeps, right after it, the results of
    its calls that follow it contiguously (first one per call id); a call with no
    such result gets the placeholder result. Any other tool message is an orphan
    and is dropped.
    """
    out: list[Message] = []
    dropped: list[Message] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        if m.role == "tool":
            dropped.append(m)  # not directly after its call
            i += 1
            continue
        out.append(m)
        i += 1
        if m.role != "assistant" or not m.tool_calls:
            continue
        wanted = {c.id for c in m.tool_calls}
        found: dict[str, Message] = {}
        while i < n and messages[i].role == "tool":
            result = messages[i]
            call_id = result.tool_call_id or ""
            if call_id in wanted and call_id not in found:
                found[call_id] = result
            else:
                dropped.append(result)
            i += 1
        for call in m.tool_calls:
            paired = found.get(call.id)
            if paired is None:
                paired = Message(role="tool", content=ORPHAN_CALL_PLACEHOLDER, tool_call_id=call.id)
                found[call.id] = paired
            out.append(paired)
    return out, dropped


def is_well_paired(messages: Sequence[Message]) -> bool:
    """True when repair would change nothing (used by tests and checks)."""
    repaired, dropped = repair_tool_pairing(messages)
    return not dropped and len(repaired) == len(messages)
