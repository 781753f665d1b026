"""CompactionService: lease → plan → summarize → persist → broadcast (DESIGN 5, 6, 9).

Sync on purpose: the management command, the admin action and the REST endpoint
call it directly; the gateway runs it in its own worker thread. The model is
called with no transaction open; the write-back is one short transaction that
re-checks the span; events go out only after the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError, close_old_connections, transaction
from django.db.models import F

from agents import services
from agents.broadcast import publish
from agents.events import (
    CompactionDone,
    CompactionFailed,
    CompactionSkipped,
    CompactionStart,
    MessageStored,
    ServerEvent,
)
from agents.message_format import message_to_json
from agents.models import ChatSession
from compaction import core, trigger
from compaction.auxiliary import AuxiliaryClient, AuxiliaryError
from compaction.context import core_messages_for_session, policy_for_session
from compaction.lease import Lease, held_lease

logger = logging.getLogger(__name__)

_STATUS_FAILURES: dict[str, tuple[str, str]] = {
    core.NOTHING_TO_COMPACT: ("nothing_to_compact", "没有可压缩的消息 (nothing to compact)"),
    core.OVERSIZED_MESSAGE: (
        "oversized_message",
        "单条消息过长，建议拆分 (one message is too large)",
    ),
    core.SYSTEM_PROMPT_TOO_LONG: (
        "system_prompt_too_long",
        "系统提示过长，请精简 (the system prompt alone exceeds the threshold)",
    ),
    core.NO_GAIN: ("no_gain", "摘要不会减少 token (the summary would not save tokens)"),
}


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    status: str  # "done" | "failed" | "skipped" | "nothing"
    reason: str | None = None
    error: str | None = None
    removed_count: int = 0
    summary_message_id: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    event: ServerEvent | None = None


@dataclass(frozen=True, slots=True)
class PlanReport:
    status: str
    message_count: int
    summarized_count: int
    pruned_count: int
    chunk_count: int
    tokens_before: int
    tokens_after: int


class CompactionFailure(Exception):
    def __init__(self, reason: str, error: str) -> None:
        super().__init__(error)
        self.reason = reason
        self.error = error


def _saved_percent(before: int, after: int) -> int:
    return round(100 * (before - after) / before) if before else 0


class CompactionService:
    def plan(self, *, session: ChatSession) -> PlanReport:
        """What a manual compaction would do now; no model call, no writes."""
        messages = core_messages_for_session(session)
        p = core.plan(messages, policy_for_session(session, messages=messages), force=True)
        summarized = len([m for m in p.middle if m.id is not None])
        return PlanReport(
            status=p.status,
            message_count=len(messages),
            summarized_count=summarized,
            pruned_count=len(p.pruned_indexes),
            chunk_count=len(p.chunks) if p.span else 0,
            tokens_before=p.tokens_before,
            tokens_after=p.estimated_tokens_after,
        )

    def compact(
        self,
        *,
        session: ChatSession,
        reason: str,
        instructions: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> CompactionOutcome:
        with held_lease(session) as lease:
            if lease is None:
                return CompactionOutcome(
                    status="skipped",
                    reason="in_progress",
                    error="另一个压缩正在进行 (a compaction of this session is already in progress)",
                )
            sid = str(session.pk)
            publish(sid, CompactionStart(session_id=sid, reason=reason))  # type: ignore[arg-type]
            return self._compact_leased(session, reason, instructions, progress, lease)

    def _compact_leased(
        self,
        session: ChatSession,
        reason: str,
        instructions: str | None,
        progress: Callable[[int, int], None] | None,
        lease: Lease,
    ) -> CompactionOutcome:
        sid = str(session.pk)
        tokens_before = 0
        try:
            client = AuxiliaryClient.for_agent(session.agent)
            messages = core_messages_for_session(session)
            policy = policy_for_session(session, auxiliary=client.channel, messages=messages)

            def summarize(request: core.SummaryRequest) -> str:
                if progress is not None:
                    progress(request.chunk_index + 1, request.chunk_count)
                return client.summarize(request)

            result = core.compress(
                messages, policy, summarize, force=reason == "manual", focus=instructions
            )
            tokens_before = result.tokens_before
            if result.status == core.UNDER_THRESHOLD:
                # the start was announced: every start gets its ending
                skipped = CompactionSkipped(
                    session_id=sid,
                    reason="under_threshold",
                    error="上下文未超过阈值，无需压缩 (the context is under the threshold)",
                )
                publish(sid, skipped)
                return CompactionOutcome(
                    status="nothing",
                    reason="under_threshold",
                    error=skipped.error,
                    tokens_before=tokens_before,
                    tokens_after=tokens_before,
                    event=skipped,
                )
            if result.status in _STATUS_FAILURES:
                raise CompactionFailure(*_STATUS_FAILURES[result.status])
            return self._persist(session, reason, result, policy, lease)
        except AuxiliaryError as exc:
            return self._fail(session, exc.reason, str(exc), tokens_before)
        except core.SummaryTooShort as exc:
            return self._fail(
                session,
                "summary_too_short",
                f"摘要异常短 (summary too short): {exc}",
                tokens_before,
            )
        except CompactionFailure as exc:
            return self._fail(session, exc.reason, exc.error, tokens_before)
        except services.SpanChanged:
            return self._fail(
                session, "history_changed", "压缩期间历史已变化 (history changed)", tokens_before
            )
        except DatabaseError:
            logger.exception("compaction of session %s could not be stored", sid)
            return self._fail(
                session,
                "storage_error",
                "写入摘要失败 (could not store the summary)",
                tokens_before,
            )

    def _persist(
        self,
        session: ChatSession,
        reason: str,
        result: core.CompactionResult,
        policy: core.CompactionPolicy,
        lease: Lease,
    ) -> CompactionOutcome:
        sid = str(session.pk)
        removed = len(result.summarized_ids)
        saved = _saved_percent(result.tokens_before, result.tokens_after)
        with transaction.atomic():
            if lease.lost or not services.compaction_lease_held(
                session=session, holder=lease.holder
            ):
                raise services.SpanChanged("the lease was lost while the summary was written")
            applied = services.compaction_apply(
                session=session,
                compacted_ids=result.summarized_ids,
                pruned_ids=result.pruned_ids,
                summary_content=result.summary_message.content if result.summary_message else None,
                pruned_token_estimate=core.estimate_tokens(
                    core.Message(role="tool", content=core.PRUNED_TOOL_PLACEHOLDER)
                ),
                event_content=f"上下文已压缩 · 移除 {removed} 条消息 · 节省 {saved}% token",
                event_payload={
                    "status": "done",
                    "reason": reason,
                    "removedCount": removed,
                    "prunedCount": len(result.pruned_ids),
                    "tokensBefore": result.tokens_before,
                    "tokensAfter": result.tokens_after,
                    "savedPercent": saved,
                    "language": result.language,
                    "requests": len(result.requests),
                },
                summary_metadata={"language": result.language, "reason": reason},
            )
            pause = trigger.pause_after_success(
                still_over_threshold=result.tokens_after >= policy.threshold_tokens,
                manual=reason == "manual",
                current=session.auto_compaction_paused_reason,
            )
            if pause != session.auto_compaction_paused_reason:
                ChatSession.objects.filter(pk=session.pk).update(
                    auto_compaction_paused_reason=pause
                )
            summary_id = applied.summary_message.pk if applied.summary_message else None
            event_json = message_to_json(applied.event_message)
            done = CompactionDone(
                session_id=sid,
                removed_count=removed,
                summary_message_id=summary_id,
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                event_message=event_json,
            )

            def announce() -> None:
                publish(sid, MessageStored(sid, event_json))
                publish(sid, done)

            transaction.on_commit(announce)
        return CompactionOutcome(
            status="done",
            removed_count=removed,
            summary_message_id=summary_id,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            event=done,
        )

    def _fail(
        self, session: ChatSession, reason: str, error: str, tokens: int
    ) -> CompactionOutcome:
        """History untouched; a failure bubble stored and announced (seed §8.3, §9)."""
        sid = str(session.pk)
        try:
            with transaction.atomic():
                bubble = services.system_event_append(
                    session=session,
                    system_type=services.SYSTEM_TYPE_COMPACTION,
                    content=f"压缩失败：{error}",
                    payload={"status": "failed", "reason": reason, "error": error},
                )
                ChatSession.objects.filter(pk=session.pk).update(
                    consecutive_compaction_failures=F("consecutive_compaction_failures") + 1
                )
                fresh = ChatSession.objects.get(pk=session.pk)
                pause = trigger.pause_after_failure(
                    reason=reason,
                    consecutive_failures=fresh.consecutive_compaction_failures,
                    current=fresh.auto_compaction_paused_reason,
                )
                ChatSession.objects.filter(pk=session.pk).update(
                    auto_compaction_paused_reason=pause
                )
                event_json: dict[str, Any] | None = message_to_json(bubble)
        except DatabaseError:
            logger.exception("could not record the failed compaction of %s", sid)
            event_json = None
        failed = CompactionFailed(
            session_id=sid, error=error, reason=reason, event_message=event_json
        )
        if event_json is not None:
            publish(sid, MessageStored(sid, event_json))
        publish(sid, failed)
        return CompactionOutcome(
            status="failed",
            reason=reason,
            error=error,
            tokens_before=tokens,
            tokens_after=tokens,
            event=failed,
        )


_compacting_here: set[str] = set()


def is_compacting_here(session_id: str) -> bool:
    """A compaction of this session is running in this process (a second request is
    answered ``in_progress`` at once instead of waiting behind it)."""
    return session_id in _compacting_here


def _compact_in_thread(session_id: str, reason: str, instructions: str | None) -> CompactionOutcome:
    """The service in a worker thread with its own database connection."""
    try:
        session = ChatSession.objects.select_related(
            "agent__model_channel", "agent__auxiliary_model_channel"
        ).get(pk=session_id)
        return CompactionService().compact(
            session=session, reason=reason, instructions=instructions
        )
    finally:
        close_old_connections()


async def acompact(
    session_id: str, *, reason: str, instructions: str | None = None
) -> CompactionOutcome:
    """Compact from async code: the model call may take a minute, so it runs in a thread of
    its own, never queued behind the process's other database work."""
    _compacting_here.add(session_id)
    try:
        return await sync_to_async(_compact_in_thread, thread_sensitive=False)(
            session_id, reason, instructions
        )
    finally:
        _compacting_here.discard(session_id)
