"""The auxiliary model (seed §4): which channel summarizes, and the summary call itself."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from agents.auxiliary import auxiliary_choice
from agents.llm_channels import channel_config
from agents.models import Agent, ModelChannel
from agents.reasons import wire_text
from condense import Message, SummaryReply, SummaryRequest
from llm import LLMError, LLMRequest, get_provider

logger = logging.getLogger(__name__)

SUMMARY_TEMPERATURE = 0.3


class AuxiliaryError(RuntimeError):
    def __init__(self, reason: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status


def resolve_channel(agent: Agent) -> ModelChannel:
    """Agent override → dict netaclaw.default_auxiliary_channel_id → error (seed §4.1); the
    rule the agent page shows too (``agents.auxiliary.auxiliary_choice``)."""
    channel = auxiliary_choice(agent=agent).channel
    if channel is None:
        raise AuxiliaryError("no_auxiliary_model", wire_text("no_auxiliary_model"))
    return channel


@dataclass(frozen=True, slots=True)
class AuxiliaryClient:
    channel: ModelChannel

    @classmethod
    def for_agent(cls, agent: Agent) -> AuxiliaryClient:
        return cls(resolve_channel(agent))

    def summarize(
        self, request: SummaryRequest, on_text: Callable[[str], None] | None = None
    ) -> SummaryReply:
        """One summary request; thinking off, temperature 0.3, output capped at the budget.
        Safe to call from several threads at once (the core summarizes parts concurrently):
        each call builds its own provider. ``on_text``: the answer streams, and it is told
        each piece as it comes (issue 17 item 12); the reply is the same either way, its
        finish reason and usage read from the stream."""
        timeout = float(settings.NETACLAW["AUXILIARY_TIMEOUT_SECONDS"])
        provider = get_provider(
            channel_config(
                self.channel,
                timeout_seconds=timeout,
                max_retries=0,  # a failed summary is reported, and the chat goes on
            )
        )
        llm_request = LLMRequest(
            messages=(Message(role="user", content=request.prompt),),
            max_tokens=request.max_output_tokens,
            temperature=SUMMARY_TEMPERATURE,
        )
        try:
            if on_text is None:
                completion = provider.complete(llm_request)
            else:
                completion = provider.complete_streaming(llm_request, _within(timeout, on_text))
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


def _within(seconds: float, on_text: Callable[[str], None]) -> Callable[[str], None]:
    """``on_text``, ending the request once it has taken ``seconds`` in all: a stream's read
    timeout is per read, and a summary request may take the auxiliary timeout, streamed or
    not."""
    deadline = time.monotonic() + seconds

    def within(piece: str) -> None:
        if time.monotonic() > deadline:
            timeout = LLMError("timeout")
            raise AuxiliaryError(timeout.reason, timeout.message)
        on_text(piece)

    return within
