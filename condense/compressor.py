"""The four phases put together: ``plan`` (no model call) and ``compress``.

``plan`` is a spine over named stages: ``span`` decides what stays verbatim and what
leaves (refusals, prune, head, span, tail), ``budget`` shares out the room toward the
target G under the threshold T (what the summarizer reads, the index, the anchors, the
summary's cap), and ``summarizing`` plans the requests. Both modules' docstrings state
their rules (issues 13 and 25; README, "How a compaction keeps what matters"); a
compacted result always ends strictly under T, and under the ceiling (what pruning alone
leaves, less the minimum gain). After the summary arrives (``compress``), the anchors take
what the summary left of the room it shares with them, up to their budget, then the
index. The result says whether the view reached the target.

No wasted call (issue 25): everything the plan can know is decided before any request —
pruning alone reaching the target, a summary that cannot gain enough (``pruned_only`` /
``no_gain``), re-grounding that would take more requests than
``policy.reground_max_requests`` (the earlier summary is updated instead). Across one
compaction at most one answer is thrown away and asked for again
(``CompactionResult.discarded_requests``).

Pruning (phase 1) only serves a ``pruned_only`` outcome: the main model's context when
pruning alone is enough, or when a summary cannot gain enough; the summarizer reads the
originals.

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

from condense.anchors import Anchors, select_anchors
from condense.assembly import repair_tool_pairing
from condense.boundaries import Span
from condense.budget import (
    Room,
    Shares,
    Sources,
    anchor_room,
    index_chars,
    index_room,
    room_for,
    share_room,
    sharing_basis,
    stands_for,
    summary_sources,
    summary_tokens,
    useful_summary,
)
from condense.checks import SUMMARY_OVER_BUDGET, SummaryRejected, SummaryTooShort
from condense.index import IndexEntry, render_index
from condense.language import Language, detect_language
from condense.outcomes import (
    CHANGED_STATUSES,
    COMPACTED,
    EARLIER_SUMMARY_TOO_LONG,
    FAILURE_STATUSES,
    HEAD_TOO_LONG,
    NO_GAIN,
    NO_ROOM_FOR_SUMMARY,
    NOTHING_TO_COMPACT,
    OVERSIZED_MESSAGE,
    PINS_TOO_LONG,
    PRUNED_ONLY,
    SYSTEM_PROMPT_TOO_LONG,
    TAIL_TOO_LONG,
    UNDER_THRESHOLD,
)
from condense.policy import CompactionPolicy
from condense.prompts import build_summary_message
from condense.pruning import pruned_view
from condense.span import choose_span, measure, prune, pruning_suffices, refusal
from condense.stages import Layout, Measured, Pruning, Stop
from condense.summarizing import (
    FinalCheck,
    RequestPlan,
    RunResult,
    Summarize,
    SummaryRequest,
    plan_requests,
    run_requests,
)
from condense.tokens import estimate_each
from condense.types import Message

__all__ = [
    "CHANGED_STATUSES",
    "COMPACTED",
    "EARLIER_SUMMARY_TOO_LONG",
    "FAILURE_STATUSES",
    "HEAD_TOO_LONG",
    "NOTHING_TO_COMPACT",
    "NO_GAIN",
    "NO_ROOM_FOR_SUMMARY",
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
    # the most summary + anchors + index may take: under the threshold, under pruning
    # alone, and the minimum gain (``budget.Room.usable``)
    free_tokens: int = 0
    # what summary, anchors and index are sized to share: the room under the target when
    # it is reached, else ``free_tokens``
    share_tokens: int = 0
    target_tokens: int = 0  # G: where the view should land (issue 25)
    reaches_target: bool = False  # a summary within its budget lands at or under G
    need_tokens: int = 0  # the smallest summary worth its request (``budget.summary_need``)
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
        summary, shared = self.summary_budget, self.share_tokens
        anchors = anchor_room(shared, summary, self.anchor_budget)
        index = min(self.index_budget, index_room(shared, summary, anchors))
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
    target_tokens: int = 0  # G: where the view should have landed (issue 25)
    # the view changed and landed at or under G; False says the target was out of reach
    reached_target: bool = False
    # answers thrown away: a retried one (at most one per compaction), or every request
    # of a summary found no better than pruning (never, when the plan is right)
    discarded_requests: int = 0

    @property
    def changed(self) -> bool:
        return self.status in CHANGED_STATUSES

    @property
    def removed_count(self) -> int:
        return len(self.summarized_ids)


def plan(
    messages: Sequence[Message],
    policy: CompactionPolicy,
    *,
    force: bool = False,
    previous_summary: str | None = None,
    focus: str | None = None,
    original_contents: Mapping[int, str] | None = None,
    regrounding_originals: Sequence[Message] | None = None,
    reground_only_if_squeezed: bool = False,
) -> CompactionPlan:
    """Phases 1–2, the budgets and the requests of phase 3, without calling any model.

    ``original_contents``: id → stored original of messages that arrive already pruned
    (their content is the placeholder or a stub); the summarizer reads those originals.
    ``regrounding_originals``: the originals the earlier summaries stand for, in order;
    when given (and there is a summary to fold) the new summary is built from them instead
    of from the earlier summaries' text — with ``reground_only_if_squeezed``, only when
    their essentials would not fit otherwise; never when that takes more than
    ``policy.reground_max_requests`` requests. ``focus`` goes into every request.
    """
    grounding = _Grounding(regrounding_originals, reground_only_if_squeezed, previous_summary)
    ready = _prepare(messages, policy, grounding, force=force)
    if isinstance(ready, CompactionPlan):
        return ready
    measured, pruning, room, layout, language = ready
    sources = summary_sources(
        measured,
        layout,
        previous_summary=previous_summary,
        regrounding_originals=grounding.originals,
        original_contents=original_contents,
        policy=policy,
    )
    shares = share_room(measured, layout, sources, room, language=language, policy=policy)
    useless = _pins_leave_no_useful_summary(policy, room, layout, sources, shares)
    if useless is not None:
        return _stopped(measured, useless, policy, pruning, force=force)
    requests = plan_requests(
        sources.pieces,
        sources.costs,
        previous=sources.previous,
        budget=shares.summary,
        language=language,
        focus=focus,
        policy=policy,
    )
    if sources.regrounded and requests.request_count > policy.reground_max_requests:
        # re-grounding would cost more requests than it is worth: update the summary
        return plan(
            messages,
            policy,
            force=force,
            previous_summary=previous_summary,
            focus=focus,
            original_contents=original_contents,
        )
    return _compaction_plan(measured, pruning, layout, sources, shares, requests, room)


def _prepare(
    messages: Sequence[Message], policy: CompactionPolicy, grounding: _Grounding, *, force: bool
) -> tuple[Measured, Pruning, Room, Layout, Language] | CompactionPlan:
    """Measure, refuse, prune, share the room and choose the span — or the plan of a run
    that ends there, without a summary."""
    measured = measure(messages, policy)
    refused = refusal(measured, policy, force=force)
    if refused is not None:
        return _stopped(measured, refused, policy, force=force)
    pruning = prune(measured, policy)
    if pruning_suffices(pruning, policy, force=force):
        return _stopped(measured, Stop(PRUNED_ONLY), policy, pruning, force=force)
    language = detect_language(measured.messages)
    room = room_for(policy, language, measured, pruning, force=force)
    layout = grounding.choose(measured, policy, pruning, room)
    if isinstance(layout, Stop):
        stop = _instead_of_failing(layout, pruning, policy, force=force)
        return _stopped(measured, stop, policy, pruning, force=force)
    return measured, pruning, room, layout, language


class _Grounding:
    """Whether the summary is re-grounded from originals, decided with the span: when the
    caller asks for it, or (``only_if_squeezed``) when the earlier summary's essentials
    would not fit otherwise."""

    def __init__(
        self, originals: Sequence[Message] | None, only_if_squeezed: bool, previous: str | None
    ) -> None:
        self.available = originals or None
        self.originals = None if only_if_squeezed else self.available
        self.previous = previous

    def choose(
        self, measured: Measured, policy: CompactionPolicy, pruning: Pruning, room: Room
    ) -> Layout | Stop:
        grounded = self.originals is not None
        layout = choose_span(
            measured, policy, pruning, room, previous=self.previous, grounded=grounded
        )
        squeezed = isinstance(layout, Stop) and layout.status == EARLIER_SUMMARY_TOO_LONG
        if squeezed and self.available is not None and not grounded:
            self.originals = self.available
            return choose_span(measured, policy, pruning, room, previous=None, grounded=True)
        return layout


def _instead_of_failing(
    stop: Stop, pruning: Pruning, policy: CompactionPolicy, *, force: bool
) -> Stop:
    """An automatic run whose summary cannot be made still prunes, when pruning alone
    gets under the threshold and gains enough."""
    if force or not pruning.gains or pruning.tokens_after >= policy.threshold_tokens:
        return stop
    return Stop(PRUNED_ONLY)


def _pins_leave_no_useful_summary(
    policy: CompactionPolicy, room: Room, layout: Layout, sources: Sources, shares: Shares
) -> Stop | None:
    """Pins that leave the summary less than a useful one (``budget.useful_summary``) fail
    the compaction, when without them there would be room for it."""
    pins = layout.tail.pin_tokens
    if not pins:
        return None
    useful = useful_summary(policy, room, layout.need, stands_for(layout, sources))
    if shares.room >= useful or layout.tail.room + pins < useful:
        return None
    return Stop(
        PINS_TOO_LONG,
        detail=f"the pinned messages ({pins} tokens) leave the summary {shares.room} tokens, "
        f"less than a useful one ({useful} tokens)",
    )


def _target(policy: CompactionPolicy, tokens_after_prune: int, force: bool) -> int:
    return policy.target_for(sharing_basis(policy, tokens_after_prune, force))


def _stopped(
    measured: Measured,
    stop: Stop,
    policy: CompactionPolicy,
    pruning: Pruning | None = None,
    *,
    force: bool,
) -> CompactionPlan:
    """The plan of a run that ends before any summary: the pruned view (with its stubs)
    for ``pruned_only``, else the input unchanged."""
    before = measured.tokens
    if stop.status == PRUNED_ONLY:
        assert pruning is not None
        view = pruned_view(measured.messages, pruning.indexes, policy)
        target = _target(policy, pruning.tokens_after, force)
        return CompactionPlan(
            PRUNED_ONLY,
            before,
            pruning.tokens_after,
            view,
            pruning.indexes,
            target_tokens=target,
            reaches_target=pruning.tokens_after <= target,
        )
    return CompactionPlan(
        stop.status,
        before,
        before,
        measured.messages,
        oversized_id=stop.oversized_id,
        detail=stop.detail,
        target_tokens=_target(policy, pruning.tokens_after if pruning else before, force),
    )


def _compaction_plan(
    measured: Measured,
    pruning: Pruning,
    layout: Layout,
    sources: Sources,
    shares: Shares,
    requests: RequestPlan,
    room: Room,
) -> CompactionPlan:
    """The stages' figures as one plan (its fields are what callers and tests read)."""
    return CompactionPlan(
        COMPACTED,
        measured.tokens,
        pruning.tokens_after,
        measured.messages,  # the pruned view is built only for a pruned_only outcome
        pruning.indexes,
        span=layout.span,
        previous_summary=sources.previous,
        summary_budget=shares.summary,
        language=requests.language,  # the summary's, as its requests carry it
        middle_tokens=layout.middle_tokens,
        head_tokens=layout.head.tokens,
        tail_tokens=layout.tail.tokens,
        framing_tokens=room.framing,
        free_tokens=layout.tail.room,
        share_tokens=shares.room,
        target_tokens=room.target,
        reaches_target=shares.reaches_target,
        need_tokens=layout.need,
        pin_tokens=layout.tail.pin_tokens,
        pinned_indexes=layout.tail.pins,
        removed_indexes=layout.removed,
        folded_indexes=layout.folded,
        anchor_candidates=shares.anchors.candidates,
        anchor_budget=shares.anchors.budget,
        index_entries=shares.index.entries,
        index_text=shares.index.text,
        index_budget=shares.index.tokens,
        regrounded=sources.regrounded,
        requests=requests,
        estimates=tuple(measured.estimates),
    )


def _ids(messages: Sequence[Message]) -> tuple[int, ...]:
    return tuple(m.id for m in messages if m.id is not None)


def _unchanged(p: CompactionPlan, original: tuple[Message, ...], **extra: Any) -> CompactionResult:
    """A non-compacted outcome: the pruned view for ``pruned_only``, else the input."""
    changed = p.status == PRUNED_ONLY
    after = p.tokens_after_prune if changed else p.tokens_before
    return CompactionResult(
        status=p.status,
        messages=p.messages if changed else original,
        tokens_before=p.tokens_before,
        tokens_after=after,
        pruned_ids=_ids([p.messages[i] for i in p.pruned_indexes]) if changed else (),
        language=p.language,
        oversized_id=p.oversized_id,
        detail=p.detail,
        target_tokens=p.target_tokens,
        reached_target=changed and after <= p.target_tokens,
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
    reground_only_if_squeezed: bool = False,
) -> CompactionResult:
    """Run the four phases (see ``plan`` for the keyword arguments).

    ``summarize`` returns a str or a ``SummaryReply``; the first rejected answer of the
    compaction is asked for once more, and any further rejection raises
    ``SummaryRejected`` (``SummaryTooShort`` for the too-short kinds). Exceptions raised by
    ``summarize`` propagate unchanged.
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
        reground_only_if_squeezed=reground_only_if_squeezed,
    )
    if p.status != COMPACTED:
        return _unchanged(p, original)
    assert p.span is not None and p.requests is not None
    run = run_requests(p.requests, summarize, policy, final_check=_fits_room(p, policy))
    summary, anchors = _summary_message(original, p, run.text, policy)
    assembled, dropped = repair_tool_pairing(_assemble(original, p, anchors.kept, summary))
    after = sum(estimate_each(assembled, policy.chars_per_token))
    if after >= policy.threshold_tokens:  # the budgets make this impossible; never report it
        raise SummaryRejected(
            SUMMARY_OVER_BUDGET, f"the compacted context ({after} tokens) is over the threshold"
        )
    if after > p.tokens_after_prune:  # no better than pruning alone (a forced run)
        return _no_better_than_pruning(p, original, run, policy)
    return _compacted(original, p, run, summary, anchors, (assembled, dropped, after))


def _compacted(
    original: tuple[Message, ...],
    p: CompactionPlan,
    run: RunResult,
    summary: Message,
    anchors: Anchors,
    view: tuple[list[Message], list[Message], int],
) -> CompactionResult:
    """A compacted outcome: ``view`` is the assembled context, the orphans its pairing
    repair dropped, and its tokens."""
    assembled, dropped, after = view
    return CompactionResult(
        status=COMPACTED,
        messages=tuple(assembled),
        tokens_before=p.tokens_before,
        tokens_after=after,
        summary_message=summary,
        summary_text=run.text,
        summarized_ids=(*_removed_ids(original, p.removed_indexes, anchors.kept), *_ids(dropped)),
        language=p.language,
        anchored_ids=_ids([original[i] for i in anchors.kept]),
        pinned_ids=_ids([original[i] for i in p.pinned_indexes]),
        folded_summary_ids=_ids([original[i] for i in p.folded_indexes]),
        regrounded=p.regrounded,
        index_entries=p.index_entries,
        target_tokens=p.target_tokens,
        reached_target=after <= p.target_tokens,
        discarded_requests=run.discarded,
        **_run_figures(p, run),
    )


def _fits_room(p: CompactionPlan, policy: CompactionPolicy) -> FinalCheck:
    """The final summary's own check: it must fit the room on its own."""
    cpt = policy.chars_per_token

    def fits(text: str) -> tuple[str, str] | None:
        tokens = summary_tokens(text, cpt)
        if tokens <= p.free_tokens:
            return None
        return SUMMARY_OVER_BUDGET, (
            f"the summary ({tokens} tokens) does not fit the "
            f"{p.free_tokens} tokens it may take under the threshold"
        )

    return fits


def _summary_message(
    original: tuple[Message, ...], p: CompactionPlan, text: str, policy: CompactionPolicy
) -> tuple[Message, Anchors]:
    """The summary message around ``text``: the anchors take what the summary left (up
    to their budget), then the index what is left of that (re-rendered when it is less
    than the index was planned for)."""
    cpt = policy.chars_per_token
    used = summary_tokens(text, cpt)
    anchors = select_anchors(
        original,
        p.anchor_candidates,
        anchor_room(p.share_tokens, used, p.anchor_budget),
        chars_per_token=cpt,
        language=p.language,
        estimates=p.estimates,
    )
    room = index_room(p.share_tokens, used, anchors.tokens)
    if room >= p.index_budget:
        index_text = p.index_text
    else:  # a summary longer than its budget: the index gives way
        index_text = render_index(p.index_entries, p.language, index_chars(room, cpt))
    sections = (index_text, anchors.cut_text)
    message = build_summary_message(text, p.language, sections, recall_hint=policy.recall_hint)
    return message, anchors


def _run_figures(p: CompactionPlan, run: RunResult) -> dict[str, Any]:
    """What a result reports of the requests sent, whatever its outcome."""
    return {
        "requests": tuple(run.requests),
        "span": p.span,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
    }


def _no_better_than_pruning(
    p: CompactionPlan, original: tuple[Message, ...], run: RunResult, policy: CompactionPolicy
) -> CompactionResult:
    """A compacted context larger than pruning alone (the plan's ceiling makes this
    impossible; kept as the last guard): pruning, if it prunes anything, else no gain —
    every request sent is reported, and counted discarded."""
    if p.pruned_indexes:
        outcome = CompactionPlan(
            PRUNED_ONLY,
            p.tokens_before,
            p.tokens_after_prune,
            pruned_view(original, p.pruned_indexes, policy),
            p.pruned_indexes,
            language=p.language,
            target_tokens=p.target_tokens,
        )
    else:
        outcome = CompactionPlan(
            NO_GAIN,
            p.tokens_before,
            p.tokens_before,
            original,
            language=p.language,
            target_tokens=p.target_tokens,
        )
    figures = _run_figures(p, run)
    return _unchanged(outcome, original, discarded_requests=len(run.requests), **figures)
