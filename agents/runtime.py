"""The ReAct loop (the seed's runAgent): pure of the database, events through a callback.

Call the model, stream its text, run the tools it asks for, append their
results, repeat until it answers or the step limit is reached. ``chat.turn``
persists what the events carry and may compact between iterations
(``before_step``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass

from agents.storable import storable_call_id, storable_text
from agents.tools import ToolRegistry
from condense.types import Message, ToolCall
from llm import LLMError, LLMRequest, Provider, StreamEnd, ToolCallReady, UsageReport
from llm import TextDelta as LLMTextDelta


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    content: str
    tool_calls: tuple[ToolCall, ...]
    usage: UsageReport | None
    cut_at: int | None = None  # the answer went past this many characters: the rest unread


def answer_cut_marker(limit: int) -> str:
    """What ends an answer cut at ``limit`` characters: the page shows it, and the model
    reads it in the next request (the seed's language first, like the other records)."""
    return (
        f"\n\n[回答超过 {limit} 个字符，其余部分未保存 "
        f"(the answer was cut at {limit} characters; the rest was not kept)]"
    )


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


def _storable_call(call: ToolCall) -> ToolCall:
    """What a model or a tool hands the loop is made storable first (``agents.storable``),
    so the history re-sent to the model is the one stored: a NUL or a lone surrogate would
    fail the next request's body, and a long id is shortened alike in call and result."""
    return ToolCall(
        id=storable_call_id(call.id),
        name=storable_text(call.name),
        arguments=storable_text(call.arguments),
    )


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
    max_answer_chars: int | None = None,
) -> str:
    """Run until the model answers without tool calls; returns how it ended: ``done``,
    ``step_limit`` or ``error`` (each also announced through ``on_event``). An answer
    past ``max_answer_chars`` is cut there: its stream is closed, and it ends with a
    marker (``answer_cut_marker``) and no tool calls — the turn ends with it."""
    history = list(messages)
    for step in range(1, max_steps + 1):
        if step > 1 and before_step is not None:
            history = list(await before_step(history))
        text_parts: list[str] = []
        tool_calls: list[ToolCall] = []
        usage: UsageReport | None = None
        room = max_answer_chars
        cut = False
        request = LLMRequest(
            messages=tuple(history),
            tools=tools.specs,
            max_tokens=max_tokens,
            temperature=temperature,
        )
        try:
            # closed when left, a cut included: its connection goes at once, not at GC
            async with aclosing(provider.stream(request)) as stream:
                async for event in stream:
                    if isinstance(event, LLMTextDelta):
                        delta = storable_text(event.text)
                        if room is not None:
                            cut = len(delta) > room
                            delta, room = delta[:room], room - min(room, len(delta))
                        text_parts.append(delta)
                        if delta:
                            await on_event(TextDelta(delta))
                        if cut:
                            break  # closes the stream: the rest is never read
                    elif isinstance(event, ToolCallReady):
                        tool_calls.append(_storable_call(event.call))
                    elif isinstance(event, UsageReport):
                        usage = event
                    elif isinstance(event, StreamEnd):
                        break
        except LLMError as exc:
            await on_event(RunFailed(exc.reason, str(exc)))
            return "error"
        text = "".join(text_parts)
        if cut and max_answer_chars is not None:
            marker = answer_cut_marker(max_answer_chars)
            await on_event(TextDelta(marker))
            text += marker
            tool_calls = []  # a cut answer is not acted on
        # Calls over the step's caps keep their place (every call gets one result) but are
        # not run, and their arguments are not stored or re-sent.
        planned = tools.plan_step(tool_calls)
        calls = tuple(call for call, _ in planned)
        assistant = AssistantMessage(text, calls, usage, max_answer_chars if cut else None)
        await on_event(assistant)
        history.append(Message(role="assistant", content=text, tool_calls=calls))
        if not calls:
            return "done"
        for call, refusal in planned:
            outcome = refusal if refusal is not None else await tools.execute(call)
            content = storable_text(outcome.content)
            await on_event(ToolResult(call.id, call.name, content, outcome.is_error))
            history.append(Message(role="tool", content=content, tool_call_id=call.id))
    await on_event(StepLimitReached(max_steps))
    return "step_limit"
