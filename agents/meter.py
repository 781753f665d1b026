"""The context meter (DESIGN 13): how full the model's window is, told truthfully.

The seed's chars/4 estimate undercounts Chinese 2.8–4.4× and code 1.5×, so
whenever the provider has reported the input tokens of a call we start from
that figure and add only the estimate of what was stored since. ``estimated``
is true only while part of the figure is an estimate. After a compaction (no report
yet for the new context) the estimate is scaled by the ratio measured before it
(``ChatSession.token_calibration``), so the bar, the trigger and the compaction's own
figures count alike.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from channels.db import database_sync_to_async
from django.db.models import Q, Sum
from django.utils import timezone

from agents.broadcast import apublish, publish
from agents.context_breakdown import context_breakdown, tool_definition_tokens
from agents.events import MeterReading, TokenUpdate
from agents.models import ChatSession, Message, ModelChannel, Role
from agents.selectors import model_visible
from agents.tools.catalog import turn_tool_specs
from condense.tokens import estimate_tokens
from condense.types import Message as CoreMessage
from llm import DEFAULT_CONTEXT_WINDOW, ToolSpec, model_max_tokens

logger = logging.getLogger(__name__)


def context_window(channel: ModelChannel | None) -> int:
    if channel is None:
        return DEFAULT_CONTEXT_WINDOW
    return model_max_tokens(channel.model, channel.context_window)


def system_prompt_tokens(system_prompt: str) -> int:
    if not system_prompt:
        return 0
    return estimate_tokens(CoreMessage(role="system", content=system_prompt))


@dataclass(frozen=True, slots=True)
class VisibleTokens:
    """Stored estimates over what the model sees (the compacted view without events)."""

    total: int
    tools: int
    since_report: int  # of the messages stored after the provider's last reported call
    pins: int = 0  # of the pinned messages (a summary counts as summary)
    summary: int = 0  # of the summary messages, the notes re-injected after them included

    def after(self, message: Message, *, reported: bool = False) -> VisibleTokens:
        """The figures once ``message`` is stored, without asking the database again (a
        turn keeps them as it stores); an answer to a call whose usage the provider
        reported starts the count since the report afresh."""
        estimate = message.token_estimate
        tools = self.tools + (estimate if message.role == Role.TOOL else 0)
        since = estimate if reported else self.since_report + estimate
        pins, summary = _kind(message, estimate)
        return VisibleTokens(
            self.total + estimate, tools, since, self.pins + pins, self.summary + summary
        )

    @property
    def messages(self) -> int:
        """Of every other visible message."""
        return self.total - self.pins - self.summary


def _kind(message: Message, estimate: int) -> tuple[int, int]:
    """``estimate`` as (pins, summary) for the breakdown (issue 17 item 11)."""
    if message.is_compaction_summary:
        return 0, estimate
    return (estimate, 0) if message.pinned else (0, 0)


def _since_report(session: ChatSession) -> int:
    return (session.last_input_position or 0) if session.last_input_tokens is not None else 0


def visible_tokens(session: ChatSession) -> VisibleTokens:
    """One aggregate query (DESIGN 3)."""
    sums = model_visible(session=session).aggregate(
        total=Sum("token_estimate"),
        tools=Sum("token_estimate", filter=Q(role=Role.TOOL)),
        added=Sum("token_estimate", filter=Q(position__gt=_since_report(session))),
        pins=Sum("token_estimate", filter=Q(pinned=True, is_compaction_summary=False)),
        summary=Sum("token_estimate", filter=Q(is_compaction_summary=True)),
    )
    return VisibleTokens(
        sums["total"] or 0,
        sums["tools"] or 0,
        sums["added"] or 0,
        sums["pins"] or 0,
        sums["summary"] or 0,
    )


def visible_tokens_of(session: ChatSession, visible: Iterable[Message]) -> VisibleTokens:
    """The same figures from rows a caller has loaded anyway (``llm_history_load``)."""
    since = _since_report(session)
    total = tools = added = pins = summary = 0
    for message in visible:
        total += message.token_estimate
        if message.role == Role.TOOL:
            tools += message.token_estimate
        if message.position > since:
            added += message.token_estimate
        pinned, summarized = _kind(message, message.token_estimate)
        pins += pinned
        summary += summarized
    return VisibleTokens(total, tools, added, pins, summary)


def meter_read(
    *,
    session: ChatSession,
    visible: VisibleTokens | None = None,
    tools: Sequence[ToolSpec] | None = None,
) -> MeterReading:
    """The session row's counters and the visible messages' estimates (one aggregate
    query unless the caller passes ``visible``); given the ``tools`` a turn sends, the
    reading carries its breakdown too (``agents.context_breakdown``)."""
    agent = session.agent
    sums = visible if visible is not None else visible_tokens(session)
    reported = session.last_input_tokens
    prompt = system_prompt_tokens(agent.system_prompt)
    if reported is not None:
        used, estimated = reported + sums.since_report, sums.since_report > 0
    else:
        used = prompt + sums.total
        if session.token_calibration:  # the last compaction's measured ÷ estimated (item 10)
            used = round(used * session.token_calibration)
        estimated = True
    window = context_window(session.channel)
    breakdown = None
    if tools is not None:
        breakdown = context_breakdown(
            used_tokens=used,
            max_tokens=window,
            system_prompt=prompt,
            tool_definitions=tool_definition_tokens(tools),
            pins=sums.pins,
            summary=sums.summary,
            messages=sums.messages,
        ).to_json()
    return MeterReading(
        used_tokens=used,
        max_tokens=window,
        threshold_percent=agent.compaction_threshold_percent,
        estimated=estimated,
        input_tokens=session.total_input_tokens,
        output_tokens=session.total_output_tokens,
        api_calls=session.api_calls,
        compaction_count=session.compaction_count,
        tool_tokens=sums.tools,
        compacting=bool(
            session.compacting_holder
            and session.compacting_holder == session.lease_holder
            and session.lease_expires_at
            and session.lease_expires_at > timezone.now()
        ),
        paused_reason=session.auto_compaction_paused_reason,
        token_cap=agent.compaction_token_cap,
        breakdown=breakdown,
    )


def context_reading(*, session: ChatSession, visible: VisibleTokens | None = None) -> MeterReading:
    """The token bar's reading with its breakdown (one aggregate query unless ``visible``
    is given): the tools counted are the ones a turn sends (``agents.tools.catalog``)."""
    return meter_read(session=session, visible=visible, tools=turn_tool_specs(session))


def token_update(session_id: str) -> TokenUpdate:
    """The token bar's event, read now."""
    session = ChatSession.objects.select_related(
        "model_channel", "agent__model_channel", "agent__auxiliary_model_channel"
    ).get(pk=session_id)
    return TokenUpdate.of(str(session_id), context_reading(session=session))


def publish_meter(session_id: str) -> None:
    """Whatever moved the token bar publishes it (a compaction, an undo, a pin, an edit):
    every socket watching the session hears the new reading. Never raises."""
    try:
        event = token_update(str(session_id))
    except Exception:  # a broken read must not undo what was stored
        logger.exception("could not read the meter of session %s", session_id)
        return
    publish(session_id, event)


async def apublish_meter(session_id: str) -> None:
    await apublish(session_id, await database_sync_to_async(token_update)(str(session_id)))
