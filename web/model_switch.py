"""Switching a chat's model, for the chat page and the REST API alike (issue 26 item 3).

The switch is refused while the agent works (like every control), and when the history no
longer fits the new model's threshold, unless the caller asked to compact first: then the
chat takes the new model, is compacted for its window (a compaction job, waited for), and
goes back to the model it had if that compaction fails. Every page of the chat then gets
the token bar of the new model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync

from agents import services
from agents.broadcast import publish
from agents.chat_model import (
    ModelFit,
    ModelSwitchRefused,
    chat_channel_find,
    chat_model_set,
    model_fit,
)
from agents.leases import TURN, lease_seconds, new_holder
from agents.meter import token_update
from agents.models import ChatSession
from runs import runner
from runs.jobs import CompactSpec


@dataclass(frozen=True, slots=True)
class ModelSwitched:
    """The chat on its new model: how its history measures there, and whether a
    compaction ran first (``compacted``)."""

    session: ChatSession
    fit: ModelFit
    compacted: bool = False


def switch_chat_model(
    *, session: ChatSession, channel_id: int | None, compact_first: bool = False
) -> ModelSwitched:
    """Raises ``ModelSwitchRefused`` with ``unknown_channel``, ``history_too_large`` (and
    the figures), ``turn_in_progress``, or — compacting first — the compaction's reason."""
    channel = chat_channel_find(channel_id)
    fit = model_fit(session=session, channel=channel)
    if not fit.fits and not compact_first:
        raise ModelSwitchRefused("history_too_large", fit)
    previous = session.model_channel
    _set_while_idle(session, channel)
    compacted = False
    if not fit.fits:
        outcome = async_to_sync(runner.compact_and_wait)(str(session.pk), CompactSpec())
        if not _done(outcome):
            _set_while_idle(session, previous)
            _announce(session)
            raise ModelSwitchRefused(_reason(outcome), fit)
        compacted = True
        session.refresh_from_db()
        fit = model_fit(session=session, channel=channel)
    _announce(session)
    return ModelSwitched(session, fit, compacted)


def _set_while_idle(session: ChatSession, channel: Any) -> None:
    holder = new_holder(TURN)
    if not services.lease_acquire(session_id=session.pk, holder=holder, seconds=lease_seconds()):
        raise ModelSwitchRefused("turn_in_progress")
    try:
        chat_model_set(session=session, channel=channel)
    finally:
        services.lease_release(session_id=session.pk, holder=holder)


def _done(outcome: dict[str, Any] | None) -> bool:
    return outcome is not None and outcome.get("status") == "done"


def _reason(outcome: dict[str, Any] | None) -> str:
    if outcome is None:
        return "compaction_timeout"
    record = outcome.get("record")
    return str(getattr(record, "reason", "") or outcome.get("reason") or "in_progress")


def _announce(session: ChatSession) -> None:
    """The token bar of the chat's model now, on every page of the chat."""
    publish(session.pk, token_update(str(session.pk)))
