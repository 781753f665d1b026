"""Stage one of a compaction (``compaction.run``): what it reads and how it counts.

Reads the session's history once (``compaction_input``), the token bar's measured figure and
its ratio to the estimate (one counter for the bar, the trigger and the record), the
calibrated policy, the auxiliary model, and — when the chain of summaries has grown deep —
the originals to rebuild the summary from. No model call, no write."""

from __future__ import annotations

from dataclasses import dataclass

import condense as core
from agents.models import ChatSession
from compaction.auxiliary import AuxiliaryClient
from compaction.context import (
    CompactionInput,
    compaction_input,
    core_messages_for_session,
    measured_tokens,
    policy_for_session,
    summarized_originals,
    token_scale,
)
from compaction.request import CompactionRun


@dataclass(frozen=True, slots=True)
class Planned:
    source: CompactionInput
    policy: core.CompactionPolicy
    measured: int | None  # the token bar's figure when it rests on a provider's report
    scale: float  # estimate ÷ measured (``context.token_scale``)
    client: AuxiliaryClient | None  # None when the summary is given
    # the originals the folded summaries stand for: rebuilt from when the chain is deep
    # (``regrounds``), else only if folding a summary would squeeze it (issue 25)
    originals: list[core.Message] | None
    regrounds: bool = False

    @property
    def tokens_before(self) -> int:
        return self.measured or self.source.visible_tokens


def plan(run: CompactionRun) -> Planned:
    """Raises ``AuxiliaryError`` (no auxiliary model) or ``UpToNotFound``."""
    session, request = run.session, run.request
    client = None if request.given is not None else AuxiliaryClient.for_agent(session.agent)
    if client is not None:
        run.audit.use_channel(client.channel)
    source = compaction_input(session, up_to=request.up_to)
    measured = measured_tokens(session)
    scale = token_scale(estimated=source.visible_tokens, measured=measured)
    policy = policy_for_session(
        session,
        auxiliary=client.channel if client is not None else None,
        scale=scale,
        up_to=request.up_to is not None,
    )
    originals, regrounds = (
        (None, False) if request.given is not None else _regrounding_originals(session, source)
    )
    planned = Planned(source, policy, measured, scale, client, originals, regrounds)
    run.audit.tokens_before = planned.tokens_before
    return planned


def _regrounding_originals(
    session: ChatSession, source: CompactionInput
) -> tuple[list[core.Message] | None, bool]:
    """The originals the folded summaries stand for, and whether to rebuild from them:
    yes when the chain of summaries has grown deep enough that a summary of a summary
    would lose what earlier rounds kept; otherwise they are there only for the core to
    fall back on when folding an earlier summary would squeeze it below its essentials."""
    depth = source.chain_depth
    if depth == 0:
        return None, False
    always = session.agent.compaction_reground
    originals, tokens = summarized_originals(session)
    if tokens > core.REGROUND_MAX_TOKENS:
        return None, False
    return originals, core.should_reground(depth, originals_tokens=tokens, always=always)


@dataclass(frozen=True, slots=True)
class DryRun:
    """What a manual compaction would do now (``compact_session --dry-run``)."""

    status: str
    message_count: int
    summarized_count: int
    pruned_count: int
    chunk_count: int
    tokens_before: int
    tokens_after: int
    target_tokens: int = 0  # where the view should land (issue 25)
    request_count: int = 0  # parts and merges, sent for real
    round_trips: int = 0  # model round trips of wall time, parts running side by side


def dry_run(session: ChatSession) -> DryRun:
    """The core's plan for a manual compaction now; no model call, no writes."""
    messages = core_messages_for_session(session)
    policy = policy_for_session(session, messages=messages)
    p = core.plan(messages, policy, force=True)
    requests = p.requests
    kept = set(p.pinned_indexes)  # pins stay verbatim: not summarized
    start = p.span.start if p.span else 0
    summarized = sum(1 for i, m in enumerate(p.middle, start) if m.id is not None and i not in kept)
    return DryRun(
        status=p.status,
        message_count=len(messages),
        summarized_count=summarized,
        pruned_count=len(p.pruned_indexes),
        chunk_count=len(p.chunks) if p.span else 0,
        tokens_before=p.tokens_before,
        tokens_after=p.estimated_tokens_after,
        target_tokens=p.target_tokens,
        request_count=requests.request_count if requests is not None else 0,
        round_trips=requests.round_trips(policy.summary_concurrency) if requests else 0,
    )
