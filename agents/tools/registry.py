"""Tools the agent may call; a failing tool becomes a tool result, never an exception."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from compaction.core.types import ToolCall
from llm import ToolSpec


class ToolError(Exception):
    """A tool refused or failed; the message is shown to the model."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    content: str
    is_error: bool = False


Handler = Callable[..., Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    handler: Handler


class ToolRegistry:
    def __init__(self, tools: list[Tool]) -> None:
        self._tools = {t.spec.name: t for t in tools}

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    async def execute(self, call: ToolCall) -> ToolOutcome:
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolOutcome(f"unknown tool {call.name!r}", is_error=True)
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolOutcome(f"arguments are not valid JSON: {exc.msg}", is_error=True)
        if not isinstance(args, dict):
            return ToolOutcome("arguments must be a JSON object", is_error=True)
        try:
            _check_arguments(tool.spec.parameters, args)
            return ToolOutcome(await tool.handler(**args))
        except ToolError as exc:
            return ToolOutcome(str(exc), is_error=True)
        except Exception as exc:  # a tool bug must not kill the turn
            return ToolOutcome(f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True)


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _check_arguments(schema: dict[str, Any], args: dict[str, Any]) -> None:
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in args:
            raise ToolError(f"missing required argument {name!r}")
    for name, value in args.items():
        if name not in properties:
            raise ToolError(f"unexpected argument {name!r}")
        expected = properties[name].get("type")
        py = _JSON_TYPES.get(expected or "")
        if py is not None and (
            not isinstance(value, py) or (expected == "integer" and isinstance(value, bool))
        ):
            raise ToolError(f"argument {name!r} must be of type {expected}")
