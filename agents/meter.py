"""The context meter (DESIGN 13): how full the model's window is, told truthfully.

The seed's chars/4 estimate undercounts Chinese 2.8–4.4× and code 1.5×, so
whenever the provider has reported the input tokens of a call we start from
that figure and add only the estimate of what was stored since. ``estimated``
is true only while part of the figure is an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, Sum
from django.utils import timezone

from agents.models import ChatSession, Message, ModelChannel, Role
from compaction.core.tokens import estimate_tokens
from compaction.core.types import Message as CoreMessage

DEFAULT_CONTEXT_WINDOW = 32768


@dataclass(frozen=True, slots=True)
class MeterReading:
    used_tokens: int
    max_tokens: int
    threshold_percent: int
    estimated: bool
    input_tokens: int
    output_tokens: int
    api_calls: int
    compaction_count: int
    tool_tokens: int
    compacting: bool = False
    paused_reason: str = ""  # automatic compaction paused (DESIGN 9); manual still works

    @property
    def threshold_tokens(self) -> int:
        return self.max_tokens * self.threshold_percent // 100

    @property
    def percent(self) -> float:
        return round(100.0 * self.used_tokens / self.max_tokens, 1) if self.max_tokens else 0.0

    @property
    def over_threshold(self) -> bool:
        return self.used_tokens >= self.threshold_tokens


def context_window(channel: ModelChannel | None) -> int:
    if channel is None:
        return DEFAULT_CONTEXT_WINDOW
    from agents.llm import model_max_tokens

    return model_max_tokens(channel.model, channel.context_window)


def system_prompt_tokens(system_prompt: str) -> int:
    if not system_prompt:
        return 0
    return estimate_tokens(CoreMessage(role="system", content=system_prompt))


def meter_read(*, session: ChatSession) -> MeterReading:
    """One aggregate query over the visible messages (DESIGN 3), plus the session row."""
    agent = session.agent
    visible = Message.objects.filter(session=session, compacted_at__isnull=True).exclude(
        role=Role.SYSTEM, metadata__has_key="systemType"
    )
    reported = session.last_input_tokens
    since = session.last_input_position if reported is not None else None
    sums = visible.aggregate(
        total=Sum("token_estimate"),
        tools=Sum("token_estimate", filter=Q(role=Role.TOOL)),
        added=Sum("token_estimate", filter=Q(position__gt=since or 0)),
    )
    if reported is not None:
        added = sums["added"] or 0
        used, estimated = reported + added, added > 0
    else:
        used = system_prompt_tokens(agent.system_prompt) + (sums["total"] or 0)
        estimated = True
    return MeterReading(
        used_tokens=used,
        max_tokens=context_window(agent.model_channel),
        threshold_percent=agent.compaction_threshold_percent,
        estimated=estimated,
        input_tokens=session.total_input_tokens,
        output_tokens=session.total_output_tokens,
        api_calls=session.api_calls,
        compaction_count=session.compaction_count,
        tool_tokens=sums["tools"] or 0,
        compacting=bool(
            session.compaction_lease_holder
            and session.compaction_lease_expires_at
            and session.compaction_lease_expires_at > timezone.now()
        ),
        paused_reason=session.auto_compaction_paused_reason,
    )
