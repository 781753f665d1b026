"""The ReAct loop (the seed's runAgent): pure of the database, events through a callback.

Call the model, stream its text, run the tools it asks for, append their
results, repeat until it answers or the step limit is reached. ``chat.turn``
persists what the events carry and may compact between iterations
(``before_step``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agents.tools import ToolRegistry
from compaction.core.types import Message, ToolCall
from llm import LLMError, LLMRequest, Provider, StreamEnd, ToolCallReady, UsageReport
from llm import TextDelta as LLMTextDelta


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider reported for one model call."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    content: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class StepLimitReached:
    steps: int


@dataclass(frozen=True, slots=True)
class RunFailed:
    reason: str
    message: str


RuntimeEvent = TextDelta | AssistantMessage | ToolResult | StepLimitReached | RunFailed


async def run_agent(
    *,
    provider: Provider,
    messages: list[Message],
    tools: ToolRegistry,
    on_event: Callable[[RuntimeEvent], Awaitable[None]],
    max_tokens: int,
    temperature: float | None = None,
    max_steps: int = 8,
    before_step: Callable[[list[Message]], Awaitable[list[Message]]] | None = None,
) -> str:
    """Run until the model answers without tool calls; returns how it ended: ``done``,
    ``step_limit`` or ``error`` (each also announced through ``on_event``)."""
    history = list(messages)
    for step in range(1, max_steps + 1):
        if step > 1 and before_step is not None:
            history = list(await before_step(history))
        text_parts: list[str] = []
        tool_calls: list[ToolCall] = []
        usage: Usage | None = None
        try:
            async for event in provider.stream(
                LLMRequest(
                    messages=tuple(history),
                    tools=tools.specs,
                    max_tokens=max_tokens,
                    temperature=temperature,
                )
            ):
                if isinstance(event, LLMTextDelta):
                    text_parts.append(event.text)
                    await on_event(TextDelta(event.text))
                elif isinstance(event, ToolCallReady):
                    tool_calls.append(event.call)
                elif isinstance(event, UsageReport):
                    usage = Usage(event.input_tokens, event.output_tokens)
                elif isinstance(event, StreamEnd):
                    break
        except LLMError as exc:
            await on_event(RunFailed(exc.reason, str(exc)))
            return "error"
        text = "".join(text_parts)
        assistant = AssistantMessage(text, tuple(tool_calls), usage)
        await on_event(assistant)
        history.append(Message(role="assistant", content=text, tool_calls=tuple(tool_calls)))
        if not tool_calls:
            return "done"
        for call in tool_calls:
            outcome = await tools.execute(call)
            await on_event(ToolResult(call.id, call.name, outcome.content, outcome.is_error))
            history.append(Message(role="tool", content=outcome.content, tool_call_id=call.id))
    await on_event(StepLimitReached(max_steps))
    return "step_limit"
