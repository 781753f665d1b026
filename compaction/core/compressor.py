"""The four phases put together: ``plan`` (no model call) and ``compress``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from compaction.core.assembly import repair_tool_pairing
from compaction.core.boundaries import Span, find_span
from compaction.core.policy import CompactionPolicy
from compaction.core.prompts import (
    Language,
    build_summary_message,
    detect_language,
    first_prompt,
    summary_body,
    update_prompt,
)
from compaction.core.pruning import prune_old_tool_outputs
from compaction.core.serialize import serialize_message, truncate_middle
from compaction.core.tokens import conservative_tokens, estimate_tokens
from compaction.core.types import Message

COMPACTED = "compacted"
PRUNED_ONLY = "pruned_only"
UNDER_THRESHOLD = "under_threshold"
NOTHING_TO_COMPACT = "nothing_to_compact"
OVERSIZED_MESSAGE = "oversized_message"
SYSTEM_PROMPT_TOO_LONG = "system_prompt_too_long"
NO_GAIN = "no_gain"
CHANGED_STATUSES = frozenset({COMPACTED, PRUNED_ONLY})


class SummaryTooShort(ValueError):
    """The auxiliary model returned an empty or too-short summary (seed §9)."""


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    prompt: str
    max_output_tokens: int
    language: Language
    is_update: bool
    chunk_index: int = 0
    chunk_count: int = 1


Summarize = Callable[[SummaryRequest], str]


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    status: str
    tokens_before: int
    tokens_after_prune: int
    messages: tuple[Message, ...]  # after phase 1
    pruned_indexes: tuple[int, ...] = ()
    span: Span | None = None
    previous_summary: str | None = None
    chunks: tuple[str, ...] = ()
    summary_budget: int = 0
    language: Language = "en"
    oversized_id: int | None = None
    middle_tokens: int = 0  # the span's estimate after pruning, at the policy's rate

    @property
    def middle(self) -> tuple[Message, ...]:
        return self.messages[self.span.start : self.span.end] if self.span else ()

    @property
    def estimated_tokens_after(self) -> int:
        """Head + tail + a summary of the full budget: the dry run's upper-side figure."""
        if self.span is None:
            return self.tokens_after_prune
        return self.tokens_after_prune - self.middle_tokens + self.summary_budget + 10


@dataclass(frozen=True, slots=True)
class CompactionResult:
    status: str
    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    summary_message: Message | None = None
    summary_text: str | None = None
    summarized_ids: tuple[int, ...] = ()
    pruned_ids: tuple[int, ...] = ()
    requests: tuple[SummaryRequest, ...] = field(default=(), repr=False)
    span: Span | None = None
    language: Language = "en"
    oversized_id: int | None = None

    @property
    def changed(self) -> bool:
        return self.status in CHANGED_STATUSES

    @property
    def removed_count(self) -> int:
        return len(self.summarized_ids)


def _chunk_pieces(pieces: Sequence[str], *, room: int, policy: CompactionPolicy) -> tuple[str, ...]:
    """Greedy chunks of whole messages that fit ``room`` tokens (a too-large one is cut)."""
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for piece in pieces:
        cost = conservative_tokens(piece, policy.chars_per_token) + 1
        if cost > room:  # one message alone is too large: cut it to fit
            keep_chars = max(200, room * policy.chars_per_token // 4)
            piece = truncate_middle(piece, keep_chars * 2 // 3, keep_chars // 3)
            cost = conservative_tokens(piece, policy.chars_per_token) + 1
        if current and used + cost > room:
            chunks.append("\n\n".join(current))
            current, used = [], 0
        current.append(piece)
        used += cost
    if current:
        chunks.append("\n\n".join(current))
    return tuple(chunks)


def _tail_budget(policy: CompactionPolicy, current_tokens: int, force: bool) -> int:
    """The seed's tail budget; a forced (manual) compaction of a conversation far below the
    threshold keeps at most a quarter of it verbatim, so /compact always compacts."""
    if not force:
        return policy.tail_token_budget
    return min(policy.tail_token_budget, current_tokens // 4)


def plan(
    messages: Sequence[Message],
    policy: CompactionPolicy,
    *,
    force: bool = False,
    previous_summary: str | None = None,
    focus: str | None = None,
) -> CompactionPlan:
    """Phases 1–2 and the chunking of phase 3, without calling any model.

    ``focus`` goes into every request, so the chunks leave room for it.
    """
    msgs = tuple(messages)
    cpt = policy.chars_per_token
    estimates = [estimate_tokens(m, cpt) for m in msgs]
    before = sum(estimates)
    threshold = policy.threshold_tokens

    def stop(status: str, **extra: object) -> CompactionPlan:
        return CompactionPlan(status, before, before, msgs, **extra)  # type: ignore[arg-type]

    system_tokens = sum(e for m, e in zip(msgs, estimates, strict=True) if m.role == "system")
    if system_tokens >= threshold:
        return stop(SYSTEM_PROMPT_TOO_LONG)
    if len(msgs) <= policy.protect_first_n:
        return stop(NOTHING_TO_COMPACT)
    if before < threshold and not force:
        return stop(UNDER_THRESHOLD)

    pruned_msgs, pruned_est, pruned_idx = prune_old_tool_outputs(msgs, estimates, policy)
    after_prune = sum(pruned_est)
    pruned_plan = CompactionPlan(
        PRUNED_ONLY, before, after_prune, tuple(pruned_msgs), tuple(pruned_idx)
    )
    if after_prune < threshold and not force and pruned_idx:
        return pruned_plan

    span = find_span(
        pruned_msgs,
        pruned_est,
        protect_first_n=policy.protect_first_n,
        tail_token_budget=_tail_budget(policy, after_prune, force),
        min_tail_messages=policy.min_tail_messages,
    )
    outside = (
        range(len(msgs)) if span is None else [*range(span.start), *range(span.end, len(msgs))]
    )
    for i in outside:
        if pruned_est[i] >= threshold:
            return stop(OVERSIZED_MESSAGE, oversized_id=msgs[i].id)
    if span is None:
        return pruned_plan if pruned_idx else stop(NOTHING_TO_COMPACT)

    middle = pruned_msgs[span.start : span.end]
    summaries = [m for m in middle if m.is_summary]
    if previous_summary is None and summaries:
        previous_summary = summary_body(summaries[-1].content)
    new_turns = [m for m in middle if not m.is_summary]
    compressed = sum(pruned_est[span.start : span.end])
    budget = policy.summary_budget(compressed)
    language = detect_language(msgs)

    pieces = [
        serialize_message(m, head=policy.serialize_head_chars, tail=policy.serialize_tail_chars)
        for m in new_turns
    ]
    template_cost = conservative_tokens(
        update_prompt("", "", budget=budget, language=language, focus=focus), cpt
    )
    carried = max(budget, conservative_tokens(previous_summary or "", cpt))
    room = max(500, policy.input_budget(budget) - template_cost - carried - 200)
    chunks = _chunk_pieces(pieces, room=room, policy=policy) if pieces else ()
    return CompactionPlan(
        COMPACTED,
        before,
        after_prune,
        tuple(pruned_msgs),
        tuple(pruned_idx),
        span=span,
        previous_summary=previous_summary,
        chunks=chunks,
        summary_budget=budget,
        language=language,
        middle_tokens=compressed,
    )


def _ids(messages: Sequence[Message]) -> tuple[int, ...]:
    return tuple(m.id for m in messages if m.id is not None)


def compress(
    messages: Sequence[Message],
    policy: CompactionPolicy,
    summarize: Summarize,
    *,
    force: bool = False,
    focus: str | None = None,
    previous_summary: str | None = None,
) -> CompactionResult:
    """Run the four phases. Exceptions raised by ``summarize`` propagate unchanged."""
    p = plan(messages, policy, force=force, previous_summary=previous_summary, focus=focus)
    original = tuple(messages)
    if p.status != COMPACTED:
        changed = p.status == PRUNED_ONLY
        return CompactionResult(
            status=p.status,
            messages=p.messages if changed else original,
            tokens_before=p.tokens_before,
            tokens_after=p.tokens_after_prune if changed else p.tokens_before,
            pruned_ids=_ids([p.messages[i] for i in p.pruned_indexes]) if changed else (),
            language=p.language,
            oversized_id=p.oversized_id,
        )

    span = p.span
    assert span is not None
    requests: list[SummaryRequest] = []
    running = p.previous_summary
    chunks = p.chunks or ("",)
    for index, chunk in enumerate(chunks):
        if running is None:
            prompt = first_prompt(chunk, budget=p.summary_budget, language=p.language, focus=focus)
        else:
            prompt = update_prompt(
                running, chunk, budget=p.summary_budget, language=p.language, focus=focus
            )
        request = SummaryRequest(
            prompt=prompt,
            max_output_tokens=p.summary_budget,
            language=p.language,
            is_update=running is not None,
            chunk_index=index,
            chunk_count=len(chunks),
        )
        requests.append(request)
        text = (summarize(request) or "").strip()
        if len(text) < policy.min_summary_chars:
            raise SummaryTooShort(
                f"the summary has {len(text)} characters; at least "
                f"{policy.min_summary_chars} are required"
            )
        running = text

    assert running is not None
    summary = build_summary_message(running, p.language)
    head, tail = p.messages[: span.start], p.messages[span.end :]
    assembled, dropped = repair_tool_pairing([*head, summary, *tail])
    after = sum(estimate_tokens(m, policy.chars_per_token) for m in assembled)
    if after > p.tokens_after_prune:
        return CompactionResult(
            status=NO_GAIN,
            messages=original,
            tokens_before=p.tokens_before,
            tokens_after=p.tokens_before,
            requests=tuple(requests),
            span=span,
            language=p.language,
        )
    in_span = set(range(span.start, span.end))
    # a pruned orphan that phase 4 drops left the context: it is reported as removed only
    removed = set(_ids(dropped))
    pruned_outside = [
        p.messages[i]
        for i in p.pruned_indexes
        if i not in in_span and p.messages[i].id not in removed
    ]
    return CompactionResult(
        status=COMPACTED,
        messages=tuple(assembled),
        tokens_before=p.tokens_before,
        tokens_after=after,
        summary_message=summary,
        summary_text=running,
        summarized_ids=_ids([*p.middle, *dropped]),
        pruned_ids=_ids(pruned_outside),
        requests=tuple(requests),
        span=span,
        language=p.language,
    )
