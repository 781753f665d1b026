"""The four phases put together: ``plan`` (no model call) and ``compress``.

How the compacted context is shared out under the threshold T (issue 13; README,
"Compaction budgets"). Everything is counted with the seed's estimate, and a compacted
result always ends strictly under T:

1. The head (``protect_first_n`` messages and the tool results of their calls) and the
   tail (the newest messages within the tail budget, at least ``min_tail_messages``)
   stay verbatim, never pruned; earlier summaries found in them are folded, not kept.
   Pinned messages of the middle (``pins``: with their tool groups) stay verbatim too,
   right after the summary.
2. What is left, ``free = T − 1 − head − tail − pins − framing``, must hold at least the
   summary floor (``summary_floor_tokens``). If it does not, the tail gives up its oldest
   tool groups (down to its last group); if it still does not, the compaction fails with
   ``head_too_long`` / ``tail_too_long`` / ``pins_too_long`` (or ``oversized_message``
   when one message alone is over T) and nothing changes.
3. The summary budget is the seed's ``max(2000, min(20% of the middle, 12000))``, capped
   by what the auxiliary model can carry (``policy.summary_cap``) and by ``free`` less the
   anchors (the user's recent words, ``min(20,000, 10% of T)``) and the mechanical index
   (``min(2,000, 5% of T)``), but never below the floor.
4. After the summary arrives, the anchors take what the summary left (up to their budget),
   then the index. A summary that does not fit ``free`` on its own is asked for again,
   shorter, once.

The summarizer reads the originals of the middle (never the pruned placeholders; not the
pins, which stay), every earlier summary (or, when re-grounding, the originals they
stand for), and the orphan tool results phase 4 drops. Pruning (phase 1) only serves a
``pruned_only`` outcome: the main model's context when pruning alone is enough, or when
a forced compaction would not save more than pruning does.

Speed (issue 13: ``compress`` within 15× one pass of the token estimate, BENCHMARKS.md):
each message is estimated once and the figure reused; the other passes over the whole
conversation are comprehensions, slices, bisections or C-level builtins, and the compacted
context is assembled from the few messages that stay. What takes a Python step per
summarized message is what has to: serializing it for the requests, the index's scan of
the tool calls, and listing its id.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from condense.anchors import Anchors, section_tokens, select_anchors
from condense.assembly import repair_tool_pairing
from condense.boundaries import (
    Span,
    align_tail_cut,
    find_compress_start,
    find_tail_cut_by_tokens,
)
from condense.checks import SUMMARY_OVER_BUDGET, SummaryRejected, SummaryTooShort
from condense.index import IndexEntry, build_index, parse_index, render_index
from condense.language import Language, detect_language
from condense.pins import pinned_indexes
from condense.policy import CompactionPolicy
from condense.prompts import build_summary_message, summary_body, summary_content
from condense.pruning import (
    PRUNED_TOOL_PLACEHOLDER,
    placeholder_tokens,
    prune_indexes,
    pruned_copy,
)
from condense.serialize import serialize_pieces
from condense.summarizing import (
    RequestPlan,
    Summarize,
    SummaryRequest,
    plan_requests,
    run_requests,
)
from condense.tokens import estimate_each, estimate_tokens
from condense.types import Message

COMPACTED = "compacted"
PRUNED_ONLY = "pruned_only"
UNDER_THRESHOLD = "under_threshold"
NOTHING_TO_COMPACT = "nothing_to_compact"
OVERSIZED_MESSAGE = "oversized_message"
SYSTEM_PROMPT_TOO_LONG = "system_prompt_too_long"
NO_GAIN = "no_gain"
HEAD_TOO_LONG = "head_too_long"
TAIL_TOO_LONG = "tail_too_long"
PINS_TOO_LONG = "pins_too_long"
CHANGED_STATUSES = frozenset({COMPACTED, PRUNED_ONLY})
# history unchanged, and the user is told why (UNDER_THRESHOLD is a skip, not a failure)
FAILURE_STATUSES = frozenset(
    {
        NOTHING_TO_COMPACT,
        OVERSIZED_MESSAGE,
        SYSTEM_PROMPT_TOO_LONG,
        NO_GAIN,
        HEAD_TOO_LONG,
        TAIL_TOO_LONG,
        PINS_TOO_LONG,
    }
)

__all__ = [
    "CHANGED_STATUSES",
    "COMPACTED",
    "FAILURE_STATUSES",
    "HEAD_TOO_LONG",
    "NOTHING_TO_COMPACT",
    "NO_GAIN",
    "OVERSIZED_MESSAGE",
    "PINS_TOO_LONG",
    "PRUNED_ONLY",
    "SYSTEM_PROMPT_TOO_LONG",
    "TAIL_TOO_LONG",
    "UNDER_THRESHOLD",
    "CompactionPlan",
    "CompactionResult",
    "Summarize",
    "SummaryRequest",
    "SummaryTooShort",
    "compress",
    "plan",
]


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    status: str
    tokens_before: int
    tokens_after_prune: int
    # pruned_only: the pruned view (phase 1); otherwise the input (pruned_indexes: what
    # phase 1 would prune)
    messages: tuple[Message, ...]
    pruned_indexes: tuple[int, ...] = ()
    span: Span | None = None
    previous_summary: str | None = None
    summary_budget: int = 0
    language: Language = "en"
    oversized_id: int | None = None
    middle_tokens: int = 0  # the span's estimate (originals), at the policy's rate
    detail: str | None = None  # why, for a failure status
    head_tokens: int = 0
    tail_tokens: int = 0
    framing_tokens: int = 0
    free_tokens: int = 0  # T − 1 − head − tail − pins − framing: summary + anchors + index
    pin_tokens: int = 0
    pinned_indexes: tuple[int, ...] = ()  # pins of the middle (and their tool groups)
    removed_indexes: tuple[int, ...] = ()  # what leaves the context (before anchors)
    folded_indexes: tuple[int, ...] = ()  # earlier summaries folded into the new one
    anchor_candidates: tuple[int, ...] = ()  # user messages of the middle, in order
    anchor_budget: int = 0
    index_entries: tuple[IndexEntry, ...] = ()
    index_text: str = ""
    index_budget: int = 0  # the tokens index_text adds to the summary message
    regrounded: bool = False
    requests: RequestPlan | None = field(default=None, repr=False)
    estimates: tuple[int, ...] = field(default=(), repr=False)  # each message's, once

    @property
    def chunks(self) -> tuple[str, ...]:
        """The middle's text as the summary requests carry it (empty: nothing to read)."""
        if self.requests is None or not any(self.requests.chunk_pieces):
            return ()
        return self.requests.chunks

    @property
    def middle(self) -> tuple[Message, ...]:
        return self.messages[self.span.start : self.span.end] if self.span else ()

    @property
    def estimated_tokens_after(self) -> int:
        """The dry run's upper-side figure: head, tail, a summary of the full budget, then
        anchors and index within what is left (always under the threshold)."""
        if self.span is None:
            return self.tokens_after_prune
        left = self.free_tokens - self.summary_budget
        anchors = min(self.anchor_budget, left)
        index = min(self.index_budget, left - anchors)
        return (
            self.head_tokens
            + self.tail_tokens
            + self.pin_tokens
            + self.framing_tokens
            + self.summary_budget
            + anchors
            + index
        )


@dataclass(frozen=True, slots=True)
class CompactionResult:
    status: str
    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    summary_message: Message | None = None
    summary_text: str | None = None  # the model's summary (without the index and anchor)
    summarized_ids: tuple[int, ...] = ()  # every input message that left the context
    pruned_ids: tuple[int, ...] = ()
    # the requests sent, in plan order, without their prompts (a 100k-message middle's
    # prompts are about 100 MB: a summarize callable that needs them keeps them itself)
    requests: tuple[SummaryRequest, ...] = field(default=(), repr=False)
    span: Span | None = None
    language: Language = "en"
    oversized_id: int | None = None
    detail: str | None = None
    anchored_ids: tuple[int, ...] = ()  # user messages of the span kept verbatim
    pinned_ids: tuple[int, ...] = ()  # pinned messages of the span (with their tool groups)
    folded_summary_ids: tuple[int, ...] = ()  # earlier summaries folded into this one
    regrounded: bool = False
    index_entries: tuple[IndexEntry, ...] = ()
    input_tokens: int = 0  # as the auxiliary model reported them (0: not reported)
    output_tokens: int = 0

    @property
    def changed(self) -> bool:
        return self.status in CHANGED_STATUSES

    @property
    def removed_count(self) -> int:
        return len(self.summarized_ids)


def _tail_budget(policy: CompactionPolicy, current_tokens: int, force: bool) -> int:
    """The seed's tail budget; a forced (manual) compaction of a conversation far below the
    threshold keeps at most a quarter of it verbatim, so /compact always compacts."""
    if not force:
        return policy.tail_token_budget
    return min(policy.tail_token_budget, current_tokens // 4)


def _framing_tokens(language: Language, chars_per_token: int, recall_hint: bool) -> int:
    """The summary message without its text: prefix, framing, the recall hint, the
    estimate's overhead, and the one token that rounding the fixed part and the text
    separately can lose."""
    fixed = len(summary_content("", language, recall_hint=recall_hint))
    return fixed // chars_per_token + estimate_tokens(Message("user"), chars_per_token) + 1


def _text_tokens(text: str, chars_per_token: int) -> int:
    return len(text) // chars_per_token


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


def _content_of(message: Message, original_contents: Mapping[int, str] | None) -> str:
    """The original content of a message that arrives pruned (its original is stored)."""
    if (
        original_contents
        and message.id is not None
        and message.content == PRUNED_TOOL_PLACEHOLDER
        and message.id in original_contents
    ):
        return original_contents[message.id]
    return message.content


def _pruned_view(messages: tuple[Message, ...], pruned: Sequence[int]) -> tuple[Message, ...]:
    out = list(messages)
    for i in pruned:
        out[i] = pruned_copy(out[i])
    return tuple(out)


def _indexes_of(dropped: Sequence[Message], messages: Sequence[Message], span: range) -> list[int]:
    """Indexes (within ``span``) of the messages phase 4 dropped (the very objects)."""
    if not dropped:
        return []
    wanted = {id(m) for m in dropped}
    return [i for i in span if id(messages[i]) in wanted]


def plan(
    messages: Sequence[Message],
    policy: CompactionPolicy,
    *,
    force: bool = False,
    previous_summary: str | None = None,
    focus: str | None = None,
    original_contents: Mapping[int, str] | None = None,
    regrounding_originals: Sequence[Message] | None = None,
) -> CompactionPlan:
    """Phases 1–2, the budgets and the requests of phase 3, without calling any model.

    ``original_contents``: id → stored original of messages that arrive already pruned
    (their content is the placeholder); the summarizer reads those originals.
    ``regrounding_originals``: the originals the earlier summaries stand for, in order;
    when given (and there is a summary to fold) the new summary is built from them and
    the middle instead of from the earlier summaries' text.
    ``focus`` goes into every request, so the chunks leave room for it.
    """
    msgs = tuple(messages)
    n = len(msgs)
    cpt = policy.chars_per_token
    estimates = estimate_each(msgs, cpt)
    before = sum(estimates)
    threshold = policy.threshold_tokens

    def stop(status: str, **extra: Any) -> CompactionPlan:
        return CompactionPlan(status, before, before, msgs, **extra)

    roles = [m.role for m in msgs]
    system_tokens = sum(estimates[i] for i in _positions(roles, "system"))
    if system_tokens >= threshold:
        return stop(SYSTEM_PROMPT_TOO_LONG)
    if n <= policy.protect_first_n:
        return stop(NOTHING_TO_COMPACT)
    if before < threshold and not force:
        return stop(UNDER_THRESHOLD)

    pinned = pinned_indexes(msgs)
    pruned_idx = tuple(prune_indexes(msgs, estimates, policy, pinned=pinned))
    placeholder = placeholder_tokens(policy)
    after_prune = (
        before - sum(map(estimates.__getitem__, pruned_idx)) + placeholder * len(pruned_idx)
    )

    def pruned_plan() -> CompactionPlan:
        return CompactionPlan(
            PRUNED_ONLY, before, after_prune, _pruned_view(msgs, pruned_idx), pruned_idx
        )

    if after_prune < threshold and not force and pruned_idx:
        return pruned_plan()

    start = find_compress_start(msgs, policy.protect_first_n)
    cut = find_tail_cut_by_tokens(
        estimates, _tail_budget(policy, after_prune, force), policy.min_tail_messages
    )
    end = align_tail_cut(msgs, cut, start)
    if end <= start:
        pruned = set(pruned_idx)
        for i in range(n):
            if (placeholder if i in pruned else estimates[i]) >= threshold:
                return stop(OVERSIZED_MESSAGE, oversized_id=msgs[i].id)
        return pruned_plan() if pruned_idx else stop(NOTHING_TO_COMPACT)
    for i in range(start):
        if estimates[i] >= threshold:
            return stop(OVERSIZED_MESSAGE, oversized_id=msgs[i].id)

    language = detect_language(msgs)
    framing = _framing_tokens(language, cpt, policy.recall_hint)
    floor = min(policy.summary_floor_tokens, policy.summary_cap)
    # an earlier summary is folded into the new one, unless it is pinned
    flags = [m.is_summary for m in msgs]
    summaries = [i for i, flag in enumerate(flags) if flag] if any(flags) else []
    folded = tuple(i for i in summaries if not msgs[i].pinned) if pinned else tuple(summaries)
    folding = set(folded)
    head_kept, head_dropped = repair_tool_pairing(
        [m for i, m in enumerate(msgs[:start]) if i not in folding]
    )
    head_tokens = sum(estimate_tokens(m, cpt) for m in head_kept)
    if head_tokens + framing + floor > threshold - 1:
        return stop(
            HEAD_TOO_LONG,
            detail=f"the protected first messages ({head_tokens} tokens) leave no room for a "
            f"summary under the threshold ({threshold} tokens)",
        )
    last = _last_group_start(msgs, end)
    while True:
        tail_kept, tail_dropped = repair_tool_pairing(
            [m for i, m in enumerate(msgs[end:], end) if i not in folding]
        )
        tail_tokens = sum(estimate_tokens(m, cpt) for m in tail_kept)
        pins = tuple(i for i in pinned if start <= i < end)
        # as they stay: a pinned call whose result never came gets the placeholder result
        pin_tokens = sum(estimate_each(repair_tool_pairing([msgs[i] for i in pins])[0], cpt))
        free = threshold - 1 - head_tokens - tail_tokens - pin_tokens - framing
        if free >= floor or end >= last:
            break
        end = _next_group_start(msgs, end)  # the tail gives up its oldest group
    if free < floor:
        biggest = max(range(end, n), key=estimates.__getitem__)
        if estimates[biggest] >= threshold:
            return stop(OVERSIZED_MESSAGE, oversized_id=msgs[biggest].id)
        if pin_tokens and free + pin_tokens >= floor:
            return stop(
                PINS_TOO_LONG,
                detail=f"the pinned messages ({pin_tokens} tokens), with the protected first "
                f"({head_tokens}) and the latest ones ({tail_tokens}), leave no room for a "
                f"summary under the threshold ({threshold} tokens)",
            )
        return stop(
            TAIL_TOO_LONG,
            detail=f"the latest messages ({tail_tokens} tokens) and the protected first ones "
            f"({head_tokens}) leave no room for a summary under the threshold "
            f"({threshold} tokens)"
            + (f"; the pinned messages take {pin_tokens} more" if pin_tokens else ""),
        )

    span = Span(start, end)
    dropped_head = _indexes_of(head_dropped, msgs, range(start))
    dropped_tail = _indexes_of(tail_dropped, msgs, range(end, n))
    in_span = [i for i in summaries if start <= i < end] if summaries else []
    middle: Sequence[int]
    if pins or in_span:  # the span less its earlier summaries and its pins
        skip = {*pins, *in_span}
        middle = [i for i in range(start, end) if i not in skip]
    else:
        middle = range(start, end)
    if dropped_head or dropped_tail or pins or len(in_span) != len(folded):
        removed = tuple(sorted({*folded, *middle, *dropped_head, *dropped_tail}))
    else:  # the common case: the span, earlier summaries in it included
        removed = tuple(range(start, end))
    if not removed:  # only pins: nothing would leave the context
        return pruned_plan() if pruned_idx else stop(NOTHING_TO_COMPACT)

    # a forced run under the threshold shares out the context it has, not the threshold
    basis = min(threshold, after_prune) if force else threshold
    regrounded = bool(regrounding_originals) and bool(folded)
    grounding = tuple(regrounding_originals or ()) if regrounded else ()
    if regrounded:
        previous: str | None = None
    elif previous_summary is not None:
        previous = previous_summary
    elif folded:
        previous = "\n\n".join(summary_body(msgs[i].content) for i in folded)
    else:
        previous = None

    # what the summarizer reads, oldest first: originals, never pruned placeholders
    sources = [
        *grounding,
        *(msgs[i] for i in dropped_head),
        *(msgs[start:end] if isinstance(middle, range) else [msgs[i] for i in middle]),
        *(msgs[i] for i in dropped_tail),
    ]
    if original_contents:
        contents = [_content_of(m, original_contents) for m in sources]
    else:
        contents = [m.content for m in sources]
    pieces, costs = serialize_pieces(
        sources,
        contents,
        head=policy.serialize_head_chars,
        tail=policy.serialize_tail_chars,
        chars_per_token=cpt,
    )
    earlier: list[IndexEntry] = []
    for i in folded:
        earlier.extend(parse_index(msgs[i].content))
    index_budget = policy.index_budget_for(basis)
    entries = build_index(
        sources,
        contents=contents,
        max_chars=index_budget * cpt,
        earlier=earlier,
        head_chars=policy.serialize_head_chars,
        tail_chars=policy.serialize_tail_chars,
    )
    index_text = render_index(entries, language, max(0, (index_budget - 1) * cpt - 2))
    index_tokens = section_tokens(index_text, cpt) if index_text else 0

    if isinstance(middle, range):
        candidates = tuple([i for i, r in enumerate(roles[start:end], start) if r == "user"])
    else:
        candidates = tuple([i for i in middle if roles[i] == "user"])
    if len(candidates) == len(removed):  # keeping them all would compact nothing
        candidates = candidates[1:]
    anchor_budget = min(
        policy.user_anchor_budget_for(basis), sum(map(estimates.__getitem__, candidates))
    )
    middle_tokens = sum(estimates[start:end]) - sum(estimates[i] for i in pins)
    compressed = (
        middle_tokens
        + sum(estimates[i] for i in folded if not start <= i < end)
        + sum(estimate_each(grounding, cpt))
    )
    cap = min(policy.summary_budget(compressed), policy.summary_cap)
    budget = min(cap, max(free - anchor_budget - index_tokens, floor))
    requests = plan_requests(
        pieces,
        costs,
        previous=previous,
        budget=budget,
        language=language,
        focus=focus,
        policy=policy,
    )
    return CompactionPlan(
        COMPACTED,
        before,
        after_prune,
        msgs,  # the pruned view is built only for a pruned_only outcome
        pruned_idx,
        span=span,
        previous_summary=previous,
        summary_budget=budget,
        language=language,
        middle_tokens=middle_tokens,
        head_tokens=head_tokens,
        tail_tokens=tail_tokens,
        framing_tokens=framing,
        free_tokens=free,
        pin_tokens=pin_tokens,
        pinned_indexes=pins,
        removed_indexes=removed,
        folded_indexes=folded,
        anchor_candidates=candidates,
        anchor_budget=anchor_budget,
        index_entries=entries,
        index_text=index_text,
        index_budget=index_tokens,
        regrounded=regrounded,
        requests=requests,
        estimates=tuple(estimates),
    )


def _ids(messages: Sequence[Message]) -> tuple[int, ...]:
    return tuple(m.id for m in messages if m.id is not None)


def _unchanged(p: CompactionPlan, original: tuple[Message, ...], **extra: Any) -> CompactionResult:
    """A non-compacted outcome: the pruned view for ``pruned_only``, else the input."""
    changed = p.status == PRUNED_ONLY
    return CompactionResult(
        status=p.status,
        messages=p.messages if changed else original,
        tokens_before=p.tokens_before,
        tokens_after=p.tokens_after_prune if changed else p.tokens_before,
        pruned_ids=_ids([p.messages[i] for i in p.pruned_indexes]) if changed else (),
        language=p.language,
        oversized_id=p.oversized_id,
        detail=p.detail,
        **extra,
    )


def _assemble(
    original: tuple[Message, ...], p: CompactionPlan, anchored: Sequence[int], summary: Message
) -> list[Message]:
    """The compacted context: the messages that stay, in order, and the summary before the
    first one that leaves, or before the first pin (a pin always follows the summary).

    Built from the few messages that stay (head, pins, anchors, tail), never by walking
    the summarized span: what leaves outside the span (earlier summaries, orphans) is found
    by bisection in the sorted ``removed_indexes``."""
    assert p.span is not None
    start, end = p.span.start, p.span.end
    removed = p.removed_indexes
    outside = {
        *removed[: bisect_left(removed, start)],
        *removed[bisect_left(removed, end) :],
    }
    stays = [
        *(i for i in range(start) if i not in outside),
        *sorted({*p.pinned_indexes, *anchored}),
        *(i for i in range(end, len(original)) if i not in outside),
    ]
    anchor_set = set(anchored)
    at = next(i for i in removed if i not in anchor_set)
    if p.pinned_indexes:
        at = min(at, p.pinned_indexes[0])
    out = [original[i] for i in stays]
    out.insert(bisect_left(stays, at), summary)
    return out


def _removed_ids(
    original: tuple[Message, ...], removed: Sequence[int], anchored: Sequence[int]
) -> tuple[int, ...]:
    """Ids of the messages that leave the context (``removed`` less the anchors), in order."""
    if removed and removed[-1] - removed[0] + 1 == len(removed):  # one run: a slice
        first = removed[0]
        messages = list(original[first : removed[-1] + 1])
        for i in reversed(anchored):
            del messages[i - first]
        ids = [m.id for m in messages]
    else:
        anchor_set = set(anchored)
        ids = [original[i].id for i in removed if i not in anchor_set]
    if None in ids:  # the core's own messages have no id
        return tuple(i for i in ids if i is not None)
    return tuple(cast("list[int]", ids))  # no None left; no second pass over a long middle


def compress(
    messages: Sequence[Message],
    policy: CompactionPolicy,
    summarize: Summarize,
    *,
    force: bool = False,
    focus: str | None = None,
    previous_summary: str | None = None,
    original_contents: Mapping[int, str] | None = None,
    regrounding_originals: Sequence[Message] | None = None,
) -> CompactionResult:
    """Run the four phases (see ``plan`` for the keyword arguments).

    ``summarize`` returns a str or a ``SummaryReply``; a rejected answer is asked for once
    more, then ``SummaryRejected`` (``SummaryTooShort`` for the too-short kinds) is
    raised. Exceptions raised by ``summarize`` propagate unchanged.
    """
    original = tuple(messages)
    p = plan(
        original,
        policy,
        force=force,
        previous_summary=previous_summary,
        focus=focus,
        original_contents=original_contents,
        regrounding_originals=regrounding_originals,
    )
    if p.status != COMPACTED:
        return _unchanged(p, original)
    assert p.span is not None and p.requests is not None
    cpt = policy.chars_per_token
    threshold = policy.threshold_tokens

    def fits(text: str) -> tuple[str, str] | None:
        if _text_tokens(text, cpt) <= p.free_tokens:
            return None
        return SUMMARY_OVER_BUDGET, (
            f"the summary ({_text_tokens(text, cpt)} tokens) does not fit the "
            f"{p.free_tokens} tokens left under the threshold"
        )

    run = run_requests(p.requests, summarize, policy, final_check=fits)
    text = run.text
    left = p.free_tokens - _text_tokens(text, cpt)
    anchors: Anchors = select_anchors(
        original,
        p.anchor_candidates,
        min(p.anchor_budget, left),
        chars_per_token=cpt,
        language=p.language,
        estimates=p.estimates,
    )
    index_room = left - anchors.tokens
    if index_room >= p.index_budget:
        index_text = p.index_text
    else:  # a summary longer than its budget: the index gives way
        index_text = render_index(p.index_entries, p.language, (index_room - 1) * cpt - 2)
    summary = build_summary_message(
        text, p.language, (index_text, anchors.cut_text), recall_hint=policy.recall_hint
    )

    assembled, dropped = repair_tool_pairing(_assemble(original, p, anchors.kept, summary))
    after = sum(estimate_each(assembled, cpt))
    if after >= threshold:  # the budgets make this impossible; never report it as done
        raise SummaryRejected(
            SUMMARY_OVER_BUDGET, f"the compacted context ({after} tokens) is over the threshold"
        )
    extra: dict[str, Any] = {
        "requests": tuple(run.requests),
        "span": p.span,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
    }
    if after > p.tokens_after_prune:  # no better than pruning alone (a forced run)
        if p.pruned_indexes:
            pruned = CompactionPlan(
                PRUNED_ONLY,
                p.tokens_before,
                p.tokens_after_prune,
                _pruned_view(original, p.pruned_indexes),
                p.pruned_indexes,
                language=p.language,
            )
            return _unchanged(pruned, original, **extra)
        return _unchanged(
            CompactionPlan(
                NO_GAIN, p.tokens_before, p.tokens_before, original, language=p.language
            ),
            original,
            **extra,
        )
    return CompactionResult(
        status=COMPACTED,
        messages=tuple(assembled),
        tokens_before=p.tokens_before,
        tokens_after=after,
        summary_message=summary,
        summary_text=text,
        summarized_ids=(*_removed_ids(original, p.removed_indexes, anchors.kept), *_ids(dropped)),
        language=p.language,
        anchored_ids=_ids([original[i] for i in anchors.kept]),
        pinned_ids=_ids([original[i] for i in p.pinned_indexes]),
        folded_summary_ids=_ids([original[i] for i in p.folded_indexes]),
        regrounded=p.regrounded,
        index_entries=p.index_entries,
        **extra,
    )
