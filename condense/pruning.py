"""Phase 1: replace old, large tool outputs with a placeholder (no model call).

Pruning serves the main model's context only (a ``pruned_only`` outcome). The summarizer
always reads the originals, and the protected head is never pruned: its tool results
(the ones right after ``protect_first_n``) stay with their call, verbatim. Nor is a
pinned message's tool group (``pins``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from condense.boundaries import find_compress_start
from condense.pins import pinned_indexes
from condense.policy import CompactionPolicy
from condense.types import Message

PRUNED_TOOL_PLACEHOLDER = "[旧工具输出已清除以节省上下文]"


def pruned_copy(m: Message) -> Message:
    """``m`` with the placeholder for content (the pruned view of a tool output)."""
    # dataclasses.replace re-validates every field; on 100k messages it was a third of phase 1
    return Message(
        m.role,
        PRUNED_TOOL_PLACEHOLDER,
        m.tool_calls,
        m.tool_call_id,
        m.id,
        m.is_summary,
        m.metadata,
        m.pinned,
    )


def pruned_view(messages: Sequence[Message], pruned: Sequence[int]) -> tuple[Message, ...]:
    """``messages`` with the ``pruned`` indexes' contents replaced by the placeholder."""
    out = list(messages)
    for i in pruned:
        out[i] = pruned_copy(out[i])
    return tuple(out)


def placeholder_tokens(policy: CompactionPolicy) -> int:
    return len(PRUNED_TOOL_PLACEHOLDER) // policy.chars_per_token + 10


def prune_indexes(
    messages: Sequence[Message],
    estimates: Sequence[int],
    policy: CompactionPolicy,
    *,
    pinned: Collection[int] | None = None,
) -> list[int]:
    """Indexes phase 1 prunes: walking back from the end, once the running total passes
    the tail budget, every older tool message over ``prune_min_chars`` after the head,
    except pinned ones (``pinned``: ``pinned_indexes(messages)``, when the caller has it).
    Messages already carrying the placeholder are left alone (idempotent)."""
    budget = policy.tail_token_budget
    running = 0
    boundary = -1  # messages at index <= boundary are "older than the tail budget"
    for i in range(len(messages) - 1, -1, -1):
        running += estimates[i]
        if running > budget:
            boundary = i - 1
            break
    start = find_compress_start(messages, policy.protect_first_n)
    if boundary < start:
        return []
    least = policy.prune_min_chars
    pruned = [
        i
        for i, m in enumerate(messages[start : boundary + 1], start)
        if m.role == "tool" and len(m.content) > least and m.content != PRUNED_TOOL_PLACEHOLDER
    ]
    if pinned is None:
        pinned = pinned_indexes(messages)
    if pinned:
        keep = set(pinned)
        pruned = [i for i in pruned if i not in keep]
    return pruned


def prune_old_tool_outputs(
    messages: Sequence[Message], estimates: Sequence[int], policy: CompactionPolicy
) -> tuple[list[Message], list[int], list[int]]:
    """Phase 1 (``prune_indexes``): the new messages, their estimates, the pruned indexes."""
    out = list(messages)
    new_estimates = list(estimates)
    pruned = prune_indexes(messages, estimates, policy)
    tokens = placeholder_tokens(policy)
    for i in pruned:
        out[i] = pruned_copy(out[i])
        new_estimates[i] = tokens
    return out, new_estimates, pruned
