"""The ReAct loop (the seed's runAgent): pure of the database, events through a callback.

Call the model, stream its text, run the tools it asks for, append their
results, repeat until it answers or the step limit is reached. The gateway
persists what the events carry and may compact between iterations
(``before_step``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agents.llm import LLMError, LLMRequest, Provider, StreamEnd, ToolCallReady, UsageReport
from agents.llm import TextDelta as LLMTextDelta
from agents.tools import ToolRegistry
from compaction.core.types import Message, ToolCall


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class UsageUpdate:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    content: str
    tool_calls: tuple[ToolCall, ...]
    usage: UsageUpdate | None


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


RuntimeEvent = (
    TextDelta | UsageUpdate | AssistantMessage | ToolResult | StepLimitReached | RunFailed
)


@dataclass(frozen=True, slots=True)
class RunResult:
    final_text: str
    steps: int
    input_tokens: int
    output_tokens: int
    api_calls: int
    stop_reason: str  # "done" | "step_limit" | "error"


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
) -> RunResult:
    history = list(messages)
    input_total = output_total = calls = 0
    for step in range(1, max_steps + 1):
        if step > 1 and before_step is not None:
            history = list(await before_step(history))
        text_parts: list[str] = []
        tool_calls: list[ToolCall] = []
        usage: UsageUpdate | None = None
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
                    usage = UsageUpdate(event.input_tokens, event.output_tokens)
                elif isinstance(event, StreamEnd):
                    break
        except LLMError as exc:
            await on_event(RunFailed(exc.reason, str(exc)))
            return RunResult("", step, input_total, output_total, calls, "error")
        calls += 1
        if usage is not None:
            input_total += usage.input_tokens
            output_total += usage.output_tokens
            await on_event(usage)
        text = "".join(text_parts)
        assistant = AssistantMessage(text, tuple(tool_calls), usage)
        await on_event(assistant)
        history.append(Message(role="assistant", content=text, tool_calls=tuple(tool_calls)))
        if not tool_calls:
            return RunResult(text, step, input_total, output_total, calls, "done")
        for call in tool_calls:
            outcome = await tools.execute(call)
            await on_event(ToolResult(call.id, call.name, outcome.content, outcome.is_error))
            history.append(Message(role="tool", content=outcome.content, tool_call_id=call.id))
    await on_event(StepLimitReached(max_steps))
    return RunResult("", max_steps, input_total, output_total, calls, "step_limit")
