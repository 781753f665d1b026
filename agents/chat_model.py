"""A chat's own model (issue 26 item 3): a chat may talk to another model channel than its
agent's, and the token bar, the window and the threshold follow it (``ChatSession.channel``).

Switching to a smaller window the history no longer fits would leave the next turn over
the threshold — or over the window itself — so the switch says so first (``ModelFit``),
and the caller offers to compact the chat for the new model before it switches."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from agents.meter import context_window, meter_read
from agents.models import ChatSession, ModelChannel


class ModelSwitchRefused(Exception):
    """``reason``: ``unknown_channel`` (no such enabled channel) or ``history_too_large``
    (with ``fit``: the figures that say why)."""

    def __init__(self, reason: str, fit: ModelFit | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fit = fit


@dataclass(frozen=True, slots=True)
class ModelFit:
    """The chat's history on a model: its tokens, that model's threshold and window."""

    tokens: int
    threshold: int
    window: int

    @property
    def fits(self) -> bool:
        return self.tokens < self.threshold

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "threshold": self.threshold, "window": self.window}


def chat_channel_choices() -> QuerySet[ModelChannel]:
    """The channels a chat may switch to: every enabled one, as an agent may use."""
    return ModelChannel.objects.filter(enabled=True).order_by("name")


def chat_channel_find(channel_id: int | None) -> ModelChannel | None:
    """The channel ``channel_id`` names (None: back to the agent's), or ``unknown_channel``."""
    if channel_id is None:
        return None
    channel = chat_channel_choices().filter(pk=channel_id).first()
    if channel is None:
        raise ModelSwitchRefused("unknown_channel")
    return channel


def model_fit(*, session: ChatSession, channel: ModelChannel | None) -> ModelFit:
    """How the chat's history measures against ``channel`` (None: the agent's) — the
    meter as it would read after the switch."""
    window = context_window(channel if channel is not None else session.agent.model_channel)
    reading = replace(meter_read(session=session), max_tokens=window)
    return ModelFit(reading.used_tokens, reading.threshold_tokens, reading.max_tokens)


def chat_model_set(*, session: ChatSession, channel: ModelChannel | None) -> ChatSession:
    """Store the chat's model (None: its agent's from now on)."""
    session.model_channel = channel
    session.updated_at = timezone.now()
    session.save(update_fields=["model_channel", "updated_at"])
    return session
