"""Which messages stay verbatim and which leave: refusals, prune, head, span, tail.

1. Refusals decided on the input alone: a system prompt over the threshold, nothing
   after the protected head, or (unless forced) a conversation under the threshold.
2. Pruning (phase 1) ends an automatic run when it alone gets under the threshold.
3. The head (``protect_first_n`` messages and the tool results of their calls) and the
   tail (the newest messages within ``budget.tail_budget``, at least
   ``min_tail_messages``) stay verbatim, never pruned; earlier summaries found in them
   are folded, not kept, and orphan tool results in them are summarized. Pinned messages
   of the middle (with their tool groups) stay verbatim too, right after the summary.
4. The room they leave (``budget.Room``) must hold the summary floor. If it does not,
   the tail gives up its oldest tool groups (down to its last group); if it still does
   not, the compaction fails with ``head_too_long`` / ``tail_too_long`` /
   ``pins_too_long`` (or ``oversized_message`` when one message alone is over T) and
   nothing changes.

Each stage returns its value (``stages``) or a ``Stop``: the outcome of a plan that ends
there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from condense.assembly import repair_tool_pairing
from condense.boundaries import Span, align_tail_cut, find_compress_start, find_tail_cut_by_tokens
from condense.budget import Room, tail_budget
from condense.outcomes import (
    HEAD_TOO_LONG,
    NOTHING_TO_COMPACT,
    OVERSIZED_MESSAGE,
    PINS_TOO_LONG,
    SYSTEM_PROMPT_TOO_LONG,
    TAIL_TOO_LONG,
    UNDER_THRESHOLD,
)
from condense.pins import pinned_indexes
from condense.policy import CompactionPolicy
from condense.pruning import placeholder_tokens, prune_indexes
from condense.stages import Head, Layout, Marks, Measured, Pruning, Stop, Tail
from condense.tokens import estimate_each, estimate_tokens
from condense.types import Message


def measure(messages: Sequence[Message], policy: CompactionPolicy) -> Measured:
    """Each message's estimate, once: the one pass every later figure is taken from."""
    msgs = tuple(messages)
    estimates = estimate_each(msgs, policy.chars_per_token)
    return Measured(msgs, estimates, [m.role for m in msgs], sum(estimates))


# ── refusals ──────────────────────────────────────────────────────────────────


def refusal(measured: Measured, policy: CompactionPolicy, *, force: bool) -> Stop | None:
    """Why the input alone rules a compaction out, if it does."""
    threshold = policy.threshold_tokens
    system = sum(measured.estimates[i] for i in _positions(measured.roles, "system"))
    if system >= threshold:
        return Stop(SYSTEM_PROMPT_TOO_LONG)
    if len(measured.messages) <= policy.protect_first_n:
        return Stop(NOTHING_TO_COMPACT)
    if measured.tokens < threshold and not force:
        return Stop(UNDER_THRESHOLD)
    return None


def _positions(values: Sequence[str], value: str) -> list[int]:
    """Where ``value`` occurs in ``values``: ``index`` scans a list in C, so a value that
    occurs a few times (the system prompt's role) costs a call per occurrence, not a
    Python step per message."""
    found: list[int] = []
    at = -1
    while True:
        try:
            at = values.index(value, at + 1)
        except ValueError:
            return found
        found.append(at)


def _oversized(
    measured: Measured, indexes: Iterable[int], threshold: int, pruning: Pruning | None = None
) -> Stop | None:
    """The first of ``indexes`` whose message alone reaches the threshold (as pruned)."""
    pruned = set(pruning.indexes) if pruning else set()
    placeholder = pruning.placeholder if pruning else 0
    estimates = measured.estimates
    for i in indexes:
        if (placeholder if i in pruned else estimates[i]) >= threshold:
            return Stop(OVERSIZED_MESSAGE, oversized_id=measured.messages[i].id)
    return None


# ── prune ─────────────────────────────────────────────────────────────────────


def prune(measured: Measured, policy: CompactionPolicy) -> Pruning:
    """Phase 1 (``pruning.prune_indexes``), and the tokens left after it."""
    estimates = measured.estimates
    pinned = pinned_indexes(measured.messages)
    indexes = tuple(prune_indexes(measured.messages, estimates, policy, pinned=pinned))
    placeholder = placeholder_tokens(policy)
    saved = sum(map(estimates.__getitem__, indexes)) - placeholder * len(indexes)
    return Pruning(pinned, indexes, placeholder, measured.tokens - saved)


def pruning_suffices(pruning: Pruning, policy: CompactionPolicy, *, force: bool) -> bool:
    """Pruning alone gets under the threshold: an automatic run ends there."""
    return pruning.tokens_after < policy.threshold_tokens and not force and bool(pruning.indexes)


# ── head, span, tail ──────────────────────────────────────────────────────────


def choose_span(
    measured: Measured, policy: CompactionPolicy, pruning: Pruning, room: Room, *, force: bool
) -> Layout | Stop:
    """Head, span and tail: which messages stay verbatim and which leave, or why none can."""
    span = span_bounds(measured, policy, pruning, force=force)
    if isinstance(span, Stop):
        return span
    marks = mark(measured, pruning.pinned)
    head = keep_head(measured, policy, span.start, marks, room)
    if isinstance(head, Stop):
        return head
    tail = fit_tail(measured, policy, span.end, head, marks, room)
    if isinstance(tail, Stop):
        return tail
    return lay_out(measured, head, tail, marks) or pruning.or_nothing()


def span_bounds(
    measured: Measured, policy: CompactionPolicy, pruning: Pruning, *, force: bool
) -> Span | Stop:
    """After the head, before the tail (within its budget), never inside a tool group."""
    msgs = measured.messages
    threshold = policy.threshold_tokens
    start = find_compress_start(msgs, policy.protect_first_n)
    budget = tail_budget(policy, pruning.tokens_after, force)
    cut = find_tail_cut_by_tokens(measured.estimates, budget, policy.min_tail_messages)
    end = align_tail_cut(msgs, cut, start)
    if end <= start:  # nothing between head and tail
        oversized = _oversized(measured, range(len(msgs)), threshold, pruning)
        return oversized or pruning.or_nothing()
    return _oversized(measured, range(start), threshold) or Span(start, end)


def mark(measured: Measured, pinned: tuple[int, ...]) -> Marks:
    """An earlier summary is folded into the new one, unless it is pinned."""
    msgs = measured.messages
    flags = [m.is_summary for m in msgs]
    summaries = [i for i, flag in enumerate(flags) if flag] if any(flags) else []
    folded = tuple(i for i in summaries if not msgs[i].pinned) if pinned else tuple(summaries)
    return Marks(pinned, summaries, folded, set(folded))


def keep_head(
    measured: Measured, policy: CompactionPolicy, start: int, marks: Marks, room: Room
) -> Head | Stop:
    """The head as it stays (folded summaries out, tool pairs repaired), if it leaves room."""
    msgs = measured.messages
    kept, dropped = repair_tool_pairing(
        [m for i, m in enumerate(msgs[:start]) if i not in marks.folding]
    )
    tokens = sum(estimate_tokens(m, policy.chars_per_token) for m in kept)
    if not room.head_leaves_room(tokens):
        return Stop(
            HEAD_TOO_LONG,
            detail=f"the protected first messages ({tokens} tokens) leave no room for a "
            f"summary under the threshold ({room.threshold} tokens)",
        )
    return Head(start, tokens, _indexes_of(dropped, msgs, range(start)))


def fit_tail(
    measured: Measured, policy: CompactionPolicy, end: int, head: Head, marks: Marks, room: Room
) -> Tail | Stop:
    """The tail from ``end`` gives up its oldest tool groups (down to its last group) until
    the room left holds a summary; else the reason none fits."""
    msgs, cpt = measured.messages, policy.chars_per_token
    last = _last_group_start(msgs, end)
    tail = _tail_at(measured, cpt, end, head, marks, room)
    while not room.holds_summary(tail.free) and tail.end < last:
        tail = _tail_at(measured, cpt, _next_group_start(msgs, tail.end), head, marks, room)
    if room.holds_summary(tail.free):
        return tail
    return _no_room(measured, head, tail, room)


def _tail_at(measured: Measured, cpt: int, end: int, head: Head, marks: Marks, room: Room) -> Tail:
    """The tail from ``end`` on, the pins of the span before it, and the room they leave."""
    msgs = measured.messages
    kept, dropped = repair_tool_pairing(
        [m for i, m in enumerate(msgs[end:], end) if i not in marks.folding]
    )
    tokens = sum(estimate_tokens(m, cpt) for m in kept)
    pins = tuple(i for i in marks.pinned if head.start <= i < end)
    # as they stay: a pinned call whose result never came gets the placeholder result
    pin_tokens = sum(estimate_each(repair_tool_pairing([msgs[i] for i in pins])[0], cpt))
    free = room.free(head=head.tokens, tail=tokens, pins=pin_tokens)
    dropped_at = _indexes_of(dropped, msgs, range(end, len(msgs)))
    return Tail(end, tokens, dropped_at, pins, pin_tokens, free)


def _no_room(measured: Measured, head: Head, tail: Tail, room: Room) -> Stop:
    """Why no summary fits: one message of the tail alone, the pins, or the tail."""
    estimates, threshold = measured.estimates, room.threshold
    biggest = max(range(tail.end, len(estimates)), key=estimates.__getitem__)
    if estimates[biggest] >= threshold:
        return Stop(OVERSIZED_MESSAGE, oversized_id=measured.messages[biggest].id)
    if tail.pin_tokens and room.holds_summary(tail.free + tail.pin_tokens):
        return Stop(
            PINS_TOO_LONG,
            detail=f"the pinned messages ({tail.pin_tokens} tokens), with the protected first "
            f"({head.tokens}) and the latest ones ({tail.tokens}), leave no room for a "
            f"summary under the threshold ({threshold} tokens)",
        )
    return Stop(
        TAIL_TOO_LONG,
        detail=f"the latest messages ({tail.tokens} tokens) and the protected first ones "
        f"({head.tokens}) leave no room for a summary under the threshold "
        f"({threshold} tokens)"
        + (f"; the pinned messages take {tail.pin_tokens} more" if tail.pin_tokens else ""),
    )


def lay_out(measured: Measured, head: Head, tail: Tail, marks: Marks) -> Layout | None:
    """What leaves the context between head and tail, with the orphans and the folded
    summaries; None when nothing would (only pins)."""
    span = Span(head.start, tail.end)
    in_span = [i for i in marks.summaries if span.start <= i < span.end]
    middle = _middle(span, tail.pins, in_span)
    removed = _removed(span, middle, head, tail, marks, in_span)
    if not removed:
        return None
    estimates = measured.estimates
    middle_tokens = sum(estimates[span.start : span.end]) - sum(estimates[i] for i in tail.pins)
    outside = sum(estimates[i] for i in marks.folded if not span.start <= i < span.end)
    return Layout(span, head, tail, marks.folded, middle, removed, middle_tokens, outside)


def _middle(span: Span, pins: tuple[int, ...], in_span: list[int]) -> Sequence[int]:
    """The span less its earlier summaries and its pins (a range when that is all of it)."""
    if not pins and not in_span:
        return range(span.start, span.end)
    skip = {*pins, *in_span}
    return [i for i in range(span.start, span.end) if i not in skip]


def _removed(
    span: Span, middle: Sequence[int], head: Head, tail: Tail, marks: Marks, in_span: list[int]
) -> tuple[int, ...]:
    """What leaves the context, sorted: the middle, the folded summaries, the orphans."""
    folded = marks.folded
    if head.dropped or tail.dropped or tail.pins or len(in_span) != len(folded):
        return tuple(sorted({*folded, *middle, *head.dropped, *tail.dropped}))
    return tuple(range(span.start, span.end))  # the common case: the span, summaries included


def _last_group_start(messages: Sequence[Message], floor: int) -> int:
    """Index of the newest message that is not a tool result (the last group's start)."""
    i = len(messages) - 1
    while i > floor and messages[i].role == "tool":
        i -= 1
    return i


def _next_group_start(messages: Sequence[Message], index: int) -> int:
    i = index + 1
    while i < len(messages) and messages[i].role == "tool":
        i += 1
    return i


def _indexes_of(dropped: Sequence[Message], messages: Sequence[Message], span: range) -> list[int]:
    """Indexes (within ``span``) of the messages tool-pair repair dropped (the very objects)."""
    if not dropped:
        return []
    wanted = {id(m) for m in dropped}
    return [i for i in span if id(messages[i]) in wanted]
