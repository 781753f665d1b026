"""Phase 2: where the summarized middle starts and ends.

The span never separates an assistant message with tool calls from its tool
results: the head is extended over a dangling group, and the tail cut is moved
earlier until it falls on a group boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from condense.types import Message


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int  # exclusive

    def __len__(self) -> int:
        return self.end - self.start


def find_compress_start(messages: Sequence[Message], protect_first_n: int) -> int:
    """``protect_first_n``, moved past the tool results right after it: each belongs to a
    call in the head (it stays with its call) or to none (an orphan, kept as it is)."""
    start = min(protect_first_n, len(messages))
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return start


def find_tail_cut_by_tokens(
    estimates: Sequence[int], tail_token_budget: int, min_tail_messages: int
) -> int:
    """Index where the tail begins: walk back accumulating tokens until the budget is spent."""
    n = len(estimates)
    running = 0
    cut = n
    for i in range(n - 1, -1, -1):
        if running + estimates[i] > tail_token_budget:
            break
        running += estimates[i]
        cut = i
    return min(cut, max(0, n - min_tail_messages))


def align_tail_cut(messages: Sequence[Message], cut: int, floor: int) -> int:
    """Move the cut earlier while it would land on a tool result (keep the group whole)."""
    while cut > floor and cut < len(messages) and messages[cut].role == "tool":
        cut -= 1
    return cut


def find_span(
    messages: Sequence[Message],
    estimates: Sequence[int],
    *,
    protect_first_n: int,
    tail_token_budget: int,
    min_tail_messages: int,
) -> Span | None:
    start = find_compress_start(messages, protect_first_n)
    cut = find_tail_cut_by_tokens(estimates, tail_token_budget, min_tail_messages)
    end = align_tail_cut(messages, cut, start)
    if end <= start:
        return None
    return Span(start, end)
