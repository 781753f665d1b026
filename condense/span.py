"""Which messages stay verbatim and which leave: refusals, prune, head, span, tail.

1. Refusals decided on the input alone: a system prompt over the threshold, nothing
   after the protected head, or (unless forced) a conversation under the threshold.
2. Pruning (phase 1) ends an automatic run when it alone brings the context to the
   target (issue 25: not merely under the threshold, where the next turn compacts again).
3. The head (``protect_first_n`` messages and the tool results of their calls) and the
   tail (the newest messages within ``budget.tail_budget``, at least
   ``min_tail_messages``) stay verbatim, never pruned; earlier summaries found in them
   are folded, not kept, and orphan tool results in them are summarized. Pinned messages
   of the middle (with their tool groups) stay verbatim too, right after the summary.
4. The room they leave (``budget.Room``) must hold what the summary needs
   (``budget.summary_need``). The tail gives up its oldest groups until the room under the
   target holds it, within ``min_tail_messages``; past that only while the room under the
   threshold does not hold it (down to its last group, the seed's rule). Then the room
   under the ceiling must hold it, or nothing changes and no request is sent: when the
   room under the threshold holds it, the summary just cannot gain enough
   (``pruned_only`` or ``no_gain``); otherwise the compaction fails
   with ``head_too_long`` / ``tail_too_long`` / ``pins_too_long`` (what is kept is over
   the threshold by itself), ``no_room_for_summary`` (it is under, but not with the
   summary floor), ``earlier_summary_too_long`` (not with an earlier summary's essentials)
   or ``oversized_message`` (one message alone is over T).

Each stage returns its value (``stages``) or a ``Stop``: the outcome of a plan that ends
there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from condense.assembly import repair_tool_pairing
from condense.boundaries import Span, align_tail_cut, find_compress_start, find_tail_cut_by_tokens
from condense.budget import Room, summary_need, tail_budget
from condense.outcomes import (
    EARLIER_SUMMARY_TOO_LONG,
    HEAD_TOO_LONG,
    NO_GAIN,
    NO_ROOM_FOR_SUMMARY,
    NOTHING_TO_COMPACT,
    OVERSIZED_MESSAGE,
    PINS_TOO_LONG,
    SYSTEM_PROMPT_TOO_LONG,
    TAIL_TOO_LONG,
    UNDER_THRESHOLD,
)
from condense.pins import pinned_indexes
from condense.policy import CompactionPolicy
from condense.pruning import prune_indexes, stub_tokens
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
    stubs = pruning.stub_tokens if pruning else {}
    estimates = measured.estimates
    for i in indexes:
        if stubs.get(i, estimates[i]) >= threshold:
            return Stop(OVERSIZED_MESSAGE, oversized_id=measured.messages[i].id)
    return None


# ── prune ─────────────────────────────────────────────────────────────────────


def prune(measured: Measured, policy: CompactionPolicy) -> Pruning:
    """Phase 1 (``pruning.prune_indexes``), and the tokens left after it (each pruned
    output counted as its stub)."""
    estimates, msgs = measured.estimates, measured.messages
    pinned = pinned_indexes(msgs)
    indexes = tuple(prune_indexes(msgs, estimates, policy, pinned=pinned))
    stubs = stub_tokens(msgs, indexes, policy)
    saved = sum(map(estimates.__getitem__, indexes)) - sum(stubs.values())
    gains = bool(indexes) and saved >= min_gain(measured.tokens, policy)
    return Pruning(pinned, indexes, stubs, measured.tokens - saved, gains)


def min_gain(tokens: int, policy: CompactionPolicy) -> int:
    """The tokens a compaction of ``tokens`` must save (``min_gain_percent``, at least 1)."""
    return max(1, math.ceil(tokens * policy.min_gain_percent / 100))


def pruning_suffices(pruning: Pruning, policy: CompactionPolicy, *, force: bool) -> bool:
    """Pruning alone brings the context to the target (and gains enough): an automatic
    run ends there, with no request."""
    if force or not pruning.gains:
        return False
    return pruning.tokens_after <= policy.target_tokens


# ── head, span, tail ──────────────────────────────────────────────────────────


def choose_span(
    measured: Measured,
    policy: CompactionPolicy,
    pruning: Pruning,
    room: Room,
    *,
    previous: str | None,
    grounded: bool,
) -> Layout | Stop:
    """Head, span and tail: which messages stay verbatim and which leave, or why none can.
    ``previous``: the caller's text of the earlier summaries; ``grounded``: the summary is
    re-grounded from originals (so it folds no earlier summary's text)."""
    span = span_bounds(measured, policy, pruning, room)
    if isinstance(span, Stop):
        return span
    marks = mark(measured, pruning.pinned)
    if _only_pins(span, marks):
        return pruning.or_nothing()
    smallest = sum(measured.estimates[span.start : span.end])  # the tail only shrinks
    need = summary_need(
        measured, marks, room, previous=previous, grounded=grounded, middle=smallest
    )
    head = keep_head(measured, policy, span.start, marks, room, need)
    if isinstance(head, Stop):
        return head
    tail = fit_tail(measured, policy, span.end, head, marks, room, need)
    if isinstance(tail, Stop):
        return pruning.or_no_gain() if tail.status == NO_GAIN else tail
    return lay_out(measured, head, tail, marks, need) or pruning.or_nothing()


def span_bounds(
    measured: Measured, policy: CompactionPolicy, pruning: Pruning, room: Room
) -> Span | Stop:
    """After the head, before the tail (within its budget), never inside a tool group."""
    msgs = measured.messages
    threshold = policy.threshold_tokens
    start = find_compress_start(msgs, policy.protect_first_n)
    budget = tail_budget(policy, room)
    cut = find_tail_cut_by_tokens(measured.estimates, budget, policy.min_tail_messages)
    end = align_tail_cut(msgs, cut, start)
    if end <= start:  # nothing between head and tail
        oversized = _oversized(measured, range(len(msgs)), threshold, pruning)
        return oversized or pruning.or_nothing()
    return _oversized(measured, range(start), threshold) or Span(start, end)


def _only_pins(span: Span, marks: Marks) -> bool:
    """Every message of the span is pinned and no earlier summary is folded: a summary
    would stand for nothing."""
    size = span.end - span.start
    if marks.folded or len(marks.pinned) < size:
        return False
    pinned = set(marks.pinned)
    return all(i in pinned for i in range(span.start, span.end))


def mark(measured: Measured, pinned: tuple[int, ...]) -> Marks:
    """An earlier summary is folded into the new one, unless it is pinned."""
    msgs = measured.messages
    flags = [m.is_summary for m in msgs]
    summaries = [i for i, flag in enumerate(flags) if flag] if any(flags) else []
    folded = tuple(i for i in summaries if not msgs[i].pinned) if pinned else tuple(summaries)
    return Marks(pinned, summaries, folded, set(folded))


def keep_head(
    measured: Measured,
    policy: CompactionPolicy,
    start: int,
    marks: Marks,
    room: Room,
    need: int,
) -> Head | Stop:
    """The head as it stays (folded summaries out, tool pairs repaired), if it leaves room
    for what the summary needs; else why not."""
    msgs = measured.messages
    kept, dropped = repair_tool_pairing(
        [m for i, m in enumerate(msgs[:start]) if i not in marks.folding]
    )
    tokens = sum(estimate_tokens(m, policy.chars_per_token) for m in kept)
    free = room.free(head=tokens, tail=0, pins=0)
    if free < need:
        kept_by = f"the protected first messages ({tokens} tokens)"
        return _short_of(room, free, need, kept_by, HEAD_TOO_LONG)
    return Head(start, tokens, _indexes_of(dropped, msgs, range(start)))


def _short_of(room: Room, free: int, need: int, kept_by: str, too_long: str) -> Stop:
    """Why ``free`` tokens under the threshold do not hold ``need``: what is kept is over it
    by itself (``too_long``), or leaves less than the summary floor, or less than the
    earlier summary's essentials."""
    where = f"under the threshold ({room.threshold} tokens)"
    if free < 0:
        return Stop(too_long, detail=f"{kept_by} leave no room for a summary {where}")
    if free < room.floor:
        return Stop(
            NO_ROOM_FOR_SUMMARY,
            detail=f"{kept_by} leave {free} tokens {where}, less than the smallest summary "
            f"worth a request ({room.floor} tokens)",
        )
    return Stop(
        EARLIER_SUMMARY_TOO_LONG,
        detail=f"{kept_by} leave {free} tokens {where}; the earlier summary it would fold "
        f"needs {need} to keep what it holds",
    )


def fit_tail(
    measured: Measured,
    policy: CompactionPolicy,
    end: int,
    head: Head,
    marks: Marks,
    room: Room,
    need: int,
) -> Tail | Stop:
    """The tail from ``end`` gives up its oldest groups until the room under the target
    holds ``need``, keeping ``min_tail_messages``; past that only while the room under the
    threshold does not (down to its last group: the seed's rule before failing). Then the
    room under the ceiling must hold it, else no summary is worth a request (``NO_GAIN``)
    or why none fits."""
    msgs = measured.messages
    at = _TailFitter(measured, policy.chars_per_token, head, marks, room)
    tail = at(end)
    keep = len(msgs) - policy.min_tail_messages
    while tail.goal < need and _next_group_start(msgs, tail.end) <= keep:
        tail = at(_next_group_start(msgs, tail.end))
    if tail.goal >= need:
        return tail
    last = _last_group_start(msgs, end)
    while tail.free < need and tail.end < last:  # below the minimum only not to fail
        tail = at(_next_group_start(msgs, tail.end))
    if tail.room >= need:
        return tail
    if tail.free >= need:
        return Stop(NO_GAIN)
    return _no_room(measured, head, tail, room, need)


class _TailFitter:
    """The tail from a given start on, the pins of the span before it, and the rooms they
    leave (under the threshold, the ceiling and the target)."""

    def __init__(self, measured: Measured, cpt: int, head: Head, marks: Marks, room: Room) -> None:
        self.measured = measured
        self.cpt = cpt
        self.head = head
        self.marks = marks
        self.room = room

    def __call__(self, end: int) -> Tail:
        msgs, cpt, room = self.measured.messages, self.cpt, self.room
        kept, dropped = repair_tool_pairing(
            [m for i, m in enumerate(msgs[end:], end) if i not in self.marks.folding]
        )
        tokens = sum(estimate_tokens(m, cpt) for m in kept)
        pins = tuple(i for i in self.marks.pinned if self.head.start <= i < end)
        # as they stay: a pinned call whose result never came gets the placeholder result
        pin_tokens = sum(estimate_each(repair_tool_pairing([msgs[i] for i in pins])[0], cpt))
        kept_tokens = {"head": self.head.tokens, "tail": tokens, "pins": pin_tokens}
        dropped_at = _indexes_of(dropped, msgs, range(end, len(msgs)))
        return Tail(
            end,
            tokens,
            dropped_at,
            pins,
            pin_tokens,
            room.free(**kept_tokens),
            room.usable(**kept_tokens),
            room.toward_target(**kept_tokens),
        )


def _no_room(measured: Measured, head: Head, tail: Tail, room: Room, need: int) -> Stop:
    """Why no summary fits under the threshold: one message of the tail alone, the pins,
    the tail, the floor, or an earlier summary's essentials."""
    estimates, threshold = measured.estimates, room.threshold
    biggest = max(range(tail.end, len(estimates)), key=estimates.__getitem__)
    if estimates[biggest] >= threshold:
        return Stop(OVERSIZED_MESSAGE, oversized_id=measured.messages[biggest].id)
    if tail.pin_tokens and tail.free + tail.pin_tokens >= need:
        return Stop(
            PINS_TOO_LONG,
            detail=f"the pinned messages ({tail.pin_tokens} tokens), with the protected first "
            f"({head.tokens}) and the latest ones ({tail.tokens}), leave no room for a "
            f"summary under the threshold ({threshold} tokens)",
        )
    kept_by = (
        f"the latest messages ({tail.tokens} tokens) and the protected first ones "
        f"({head.tokens})"
        + (f", with the pinned messages ({tail.pin_tokens})," if tail.pin_tokens else "")
    )
    return _short_of(room, tail.free, need, kept_by, TAIL_TOO_LONG)


def lay_out(measured: Measured, head: Head, tail: Tail, marks: Marks, need: int) -> Layout | None:
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
    return Layout(span, head, tail, marks.folded, middle, removed, middle_tokens, outside, need)


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
