"""What fills the context (issue 17 item 11): system prompt, tool definitions, pins,
summary, messages and what is free, in the token bar's count.

The parts are estimated alike (``condense.tokens``: a tool definition is its JSON
schema, as the wire carries it, counted like a message) and then scaled to the meter's
``used_tokens`` — the provider's reported input tokens plus the estimate of what came
since, or the calibrated estimate (``agents.meter``) — so they add up to the bar's figure
exactly. Each part is its share of that figure; the rounding is the largest remainder's
(every part rounded down, then the tokens left over go one each to the parts with the
largest fractions, the earlier part first on a tie). ``free`` is the window less the bar's
figure, never below zero. Pure: no database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from condense.tokens import estimate_tokens
from condense.types import Message
from llm import ToolSpec


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    system_prompt: int
    tool_definitions: int
    pins: int
    summary: int
    messages: int
    free: int

    @property
    def used(self) -> int:
        return self.system_prompt + self.tool_definitions + self.pins + self.summary + self.messages

    def to_json(self) -> dict[str, int]:
        return {
            "systemPrompt": self.system_prompt,
            "toolDefinitions": self.tool_definitions,
            "pins": self.pins,
            "summary": self.summary,
            "messages": self.messages,
            "free": self.free,
        }


def tool_definition_tokens(tools: Iterable[ToolSpec]) -> int:
    """The estimate of the tools a turn sends: each one's name, description and JSON schema
    as JSON, counted like a message's text. Kept per set of tools (a turn reads the meter
    after every answer; the tools are the same few sets in a process)."""
    return _definition_tokens(tuple(tools))


@lru_cache(maxsize=64)
def _definition_tokens(tools: tuple[ToolSpec, ...]) -> int:
    return sum(
        estimate_tokens(
            Message(
                role="system",
                content=json.dumps(
                    {"name": t.name, "description": t.description, "parameters": t.parameters},
                    ensure_ascii=False,
                ),
            )
        )
        for t in tools
    )


def _scaled(estimates: list[int], total: int) -> list[int]:
    """``estimates`` scaled to sum to ``total`` (largest remainder); all to the last part
    when there is nothing to scale."""
    whole = sum(estimates)
    if whole <= 0:
        return [0] * (len(estimates) - 1) + [total]
    shares = [divmod(e * total, whole) for e in estimates]
    parts = [quotient for quotient, _ in shares]
    left = total - sum(parts)
    by_remainder = sorted(range(len(shares)), key=lambda i: (-shares[i][1], i))
    for i in by_remainder[:left]:
        parts[i] += 1
    return parts


def context_breakdown(
    *,
    used_tokens: int,
    max_tokens: int,
    system_prompt: int,
    tool_definitions: int,
    pins: int,
    summary: int,
    messages: int,
) -> ContextBreakdown:
    """The estimated parts (``pins``: pinned messages; ``summary``: summary messages with
    the notes re-injected after them; ``messages``: every other visible message) scaled to
    the meter's ``used_tokens`` in a window of ``max_tokens``."""
    estimates = [system_prompt, tool_definitions, pins, summary, messages]
    prompt, tools, pinned, summarized, rest = _scaled(
        [max(0, e) for e in estimates], max(0, used_tokens)
    )
    return ContextBreakdown(
        system_prompt=prompt,
        tool_definitions=tools,
        pins=pinned,
        summary=summarized,
        messages=rest,
        free=max(0, max_tokens - used_tokens),
    )
