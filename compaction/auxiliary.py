"""The auxiliary model (seed §4): which channel summarizes, and the summary call itself."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

from agents.llm_channels import channel_config
from agents.models import Agent, ModelChannel
from agents.reasons import wire_text
from compaction.core import Message, SummaryReply, SummaryRequest
from llm import LLMError, LLMRequest, get_provider
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_value

logger = logging.getLogger(__name__)

SUMMARY_TEMPERATURE = 0.3


class AuxiliaryError(RuntimeError):
    def __init__(self, reason: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status


def resolve_channel(agent: Agent) -> ModelChannel:
    """Agent override → dict netaclaw.default_auxiliary_channel_id → error (seed §4.1)."""
    channel = agent.auxiliary_model_channel
    if channel is not None and channel.enabled:
        return channel
    raw = dict_value(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL)
    if raw and raw.strip().isdigit():
        channel = ModelChannel.objects.filter(pk=int(raw), enabled=True).first()
        if channel is not None:
            return channel
    raise AuxiliaryError("no_auxiliary_model", wire_text("no_auxiliary_model"))


@dataclass(frozen=True, slots=True)
class AuxiliaryClient:
    channel: ModelChannel

    @classmethod
    def for_agent(cls, agent: Agent) -> AuxiliaryClient:
        return cls(resolve_channel(agent))

    def summarize(self, request: SummaryRequest) -> SummaryReply:
        """One summary request; thinking off, temperature 0.3, output capped at the budget.
        Safe to call from several threads at once (the core summarizes parts concurrently):
        each call builds its own provider."""
        provider = get_provider(
            channel_config(
                self.channel,
                timeout_seconds=float(settings.NETACLAW["AUXILIARY_TIMEOUT_SECONDS"]),
                max_retries=0,  # a failed summary is reported, and the chat goes on
            )
        )
        try:
            completion = provider.complete(
                LLMRequest(
                    messages=(Message(role="user", content=request.prompt),),
                    max_tokens=request.max_output_tokens,
                    temperature=SUMMARY_TEMPERATURE,
                )
            )
        except LLMError as exc:
            raise AuxiliaryError(exc.reason, exc.message, exc.status) from None  # has the status
        usage = completion.usage
        return SummaryReply(
            text=completion.text,
            finish_reason=completion.stop_reason,
            had_tool_calls=bool(completion.tool_calls),
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
        )
