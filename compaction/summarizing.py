"""Stage two of a compaction (``compaction.run``): its result — given (an accepted
preview), prepared (``compaction.background``, the head start an automatic compaction may
take) or written fresh by the auxiliary model through the pure core, streaming to the page
as it is written (``compaction.progress``) and audited request by request."""

from __future__ import annotations

from dataclasses import dataclass

import condense as core
from agents.broadcast import publish
from agents.reasons import wire_text
from compaction import background, notes
from compaction import progress as summary_progress
from compaction.auxiliary import AuxiliaryClient
from compaction.context import CompactionInput
from compaction.outcome import CompactionFailure
from compaction.planning import Planned
from compaction.request import CompactionRun

# the core's statuses that fail a compaction → their reason (agents.reasons)
FAILING_STATUSES: dict[str, str] = {
    core.NOTHING_TO_COMPACT: "nothing_to_compact",
    core.OVERSIZED_MESSAGE: "oversized_message",
    core.SYSTEM_PROMPT_TOO_LONG: "system_prompt_too_long",
    core.NO_GAIN: "no_gain",
    core.HEAD_TOO_LONG: "head_too_long",
    core.TAIL_TOO_LONG: "tail_too_long",
    core.PINS_TOO_LONG: "pins_too_long",
    core.NO_ROOM_FOR_SUMMARY: "no_room_for_summary",
    core.EARLIER_SUMMARY_TOO_LONG: "earlier_summary_too_long",
}


def stub_estimates(result: core.CompactionResult) -> dict[int, int]:
    """Each output pruned by ``result`` as the estimate of the stub it reads as from then
    on (the view the core returned holds the stubs): what the token bar counts it as."""
    pruned = set(result.pruned_ids)
    return {
        m.id: core.estimate_tokens(m)
        for m in result.messages
        if m.id is not None and m.id in pruned
    }


@dataclass(frozen=True, slots=True)
class Counted:
    """A compaction's tokens before and after in the token bar's count: ``after`` is what
    the bar will read once the write-back is committed (the stored estimates of what stays
    visible, scaled by ``calibration`` = measured ÷ estimated)."""

    before: int
    after: int
    calibration: float | None

    @classmethod
    def of(cls, planned: Planned, result: core.CompactionResult) -> Counted:
        source = planned.source
        rows = source.row_tokens
        stubs = stub_estimates(result)
        estimate = source.visible_tokens - sum(rows.get(i, 0) for i in result.summarized_ids)
        estimate -= sum(rows.get(i, 0) - stubs.get(i, 0) for i in result.pruned_ids)
        if result.summary_message is not None:
            estimate += core.estimate_tokens(
                core.Message(role="user", content=result.summary_message.content)
            )
        calibration = 1 / planned.scale if planned.measured is not None else None
        return cls(planned.tokens_before, round(estimate * (calibration or 1.0)), calibration)


@dataclass(frozen=True, slots=True)
class Summarized:
    result: core.CompactionResult
    chain_depth: int
    counted: Counted

    @property
    def under_threshold(self) -> bool:
        return self.result.status == core.UNDER_THRESHOLD


def summarize(run: CompactionRun, planned: Planned) -> Summarized:
    """Raises ``CompactionFailure`` for a core status that fails the compaction,
    ``AuxiliaryError`` / ``core.SummaryRejected`` from the model, ``CompactionCancelled``
    from a stop and ``services.SpanChanged`` when a given summary no longer applies."""
    given = run.request.given
    if given is not None:
        result = given.result_for(planned.source)
        depth = given.chain_depth
    else:
        result = _prepared(run, planned) or _fresh(run, planned)
        depth = core.next_chain_depth(
            planned.source.chain_depth, regrounded=result.regrounded, status=result.status
        )
    if result.status in FAILING_STATUSES:
        raise CompactionFailure(FAILING_STATUSES[result.status], _failure_text(result))
    return Summarized(result, depth, Counted.of(planned, result))


def _failure_text(result: core.CompactionResult) -> str:
    return wire_text(FAILING_STATUSES[result.status], result.detail or "")


def _prepared(run: CompactionRun, planned: Planned) -> core.CompactionResult | None:
    """The summary prepared from the soft threshold while the chat went on, when it still
    applies (only an automatic compaction takes one)."""
    if not run.automatic or run.request.forced or planned.regrounds:
        return None
    taken = background.take(
        session=run.session,
        source=planned.source,
        policy=planned.policy,
        instructions=run.audit.instructions,
        cancelled=run.lease.stop.cancel,
    )
    if taken is None:
        return None
    run.audit.notes = taken.notes
    run.audit.count_prepared(taken.result)
    return taken.result


def _fresh(run: CompactionRun, planned: Planned) -> core.CompactionResult:
    source = planned.source
    if run.automatic and run.session.agent.compaction_notes:
        run.audit.notes = notes.write_notes(run.session, source.messages)
    assert planned.client is not None  # resolved by the plan unless the summary is given
    return core.compress(
        source.messages,
        planned.policy,
        _summarizer(run, planned.client, source),
        force=run.request.forced,
        focus=run.audit.instructions or None,
        original_contents=source.original_contents,
        regrounding_originals=planned.originals,
        reground_only_if_squeezed=not planned.regrounds,
    )


def _summarizer(
    run: CompactionRun, client: AuxiliaryClient, source: CompactionInput
) -> core.Summarize:
    """The core's ``summarize``: one auxiliary request, streamed to the page and audited;
    a stop or a lost lease ends it between requests and mid-stream."""
    sid = run.session_id
    live = summary_progress.SummaryStream(sid, lambda event: publish(sid, event), check=run.check)

    def summarize(request: core.SummaryRequest) -> core.SummaryReply:
        # the core may call this from several threads at once: no database here
        if request.chunk_index > 0 or request.attempt:
            run.check()
        if run.request.progress is not None:
            run.request.progress(request.chunk_index + 1, request.chunk_count)
        try:
            reply = client.summarize(request, on_text=live.writer(request))
        except Exception:
            run.audit.count_failed()
            raise
        live.finished()
        run.audit.count(reply)
        return reply

    return summarize
