"""Pinned messages (issue 17): never summarized away, never pruned.

A pinned message in the protected head or in the kept tail is kept there anyway. One in
the summarized middle stays verbatim, right after the summary, in its original order
among the other pins, and its tokens count against the threshold like the head's and
the tail's (a compaction whose pins leave no room for a summary fails with
``pins_too_long`` instead of ending above the threshold). Pruning never replaces a
pinned tool output.

A pin holds its whole tool group, because a provider rejects a call without its result
and a result without its call: pinning an assistant message that calls tools keeps its
results with it, and pinning a tool result keeps its call and the call's other results.
A tool result that answers no call right before it (which a stored history never has)
cannot be sent to a model at all, so pinning it keeps nothing: it is dropped like any
orphan.
"""

from __future__ import annotations

from collections.abc import Sequence

from condense.types import Message


def _group(messages: Sequence[Message], index: int) -> tuple[int, ...]:
    """The indexes of the tool group ``index`` belongs to: an assistant message that calls
    tools and the results of its calls right after it (the first for each call, as
    ``assembly.repair_tool_pairing`` pairs them); just ``index`` outside one; nothing for
    a tool result that answers no call before it."""
    start = index
    while start > 0 and messages[start].role == "tool":
        start -= 1
    first = messages[start]
    if first.role != "assistant" or not first.tool_calls:  # no call before it
        return () if messages[index].role == "tool" else (index,)
    wanted = {call.id for call in first.tool_calls}
    group = [start]
    end = start + 1
    while end < len(messages) and messages[end].role == "tool":
        call_id = messages[end].tool_call_id
        if call_id in wanted:
            wanted.discard(call_id)
            group.append(end)
        end += 1
    return tuple(group) if index in group else ()


def pinned_indexes(messages: Sequence[Message]) -> tuple[int, ...]:
    """Indexes of the pinned messages and of the rest of their tool groups, in order."""
    flags = [m.pinned for m in messages]
    if not any(flags):  # the common case, found in C
        return ()
    pinned = [i for i, flag in enumerate(flags) if flag]
    kept: set[int] = set()
    for i in pinned:
        if i not in kept:
            kept.update(_group(messages, i))
    return tuple(sorted(kept))
