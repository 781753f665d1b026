"""Tools the agent may call; a failing tool becomes a tool result, never an exception.

No tool may stall the server: a handler that blocks (files, regular expressions) is a
plain function, which the registry runs in a worker thread of its own pool; every call
has a time limit (``ToolLimits.timeout_seconds``), after which the model gets a tool
error. A thread cannot be killed, so blocking handlers call ``check_deadline()`` in their
loops and stop soon after the limit too.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from agents.tools.limits import ToolLimits
from condense.types import ToolCall
from llm import ToolSpec

logger = logging.getLogger(__name__)


class ToolError(Exception):
    """A tool refused or failed; the message is shown to the model."""


class ToolTimeout(ToolError):
    """The call's time limit has passed (raised by ``check_deadline``)."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    content: str
    is_error: bool = False


# Async handlers must not block; plain functions run in a worker thread.
Handler = Callable[..., Awaitable[str]] | Callable[..., str]


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    handler: Handler


# Tool work has its own threads: slow tools cannot starve the default executor the rest of
# the server uses, and a call's deadline is checked when its thread starts.
_POOL = ThreadPoolExecutor(
    max_workers=min(32, (os.cpu_count() or 1) + 4), thread_name_prefix="netaclaw-tool"
)
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "netaclaw_tool_deadline", default=None
)


def check_deadline() -> None:
    """Raise ToolTimeout once the running tool call is out of time (no-op outside one)."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise ToolTimeout


class ToolRegistry:
    def __init__(
        self,
        tools: list[Tool],
        *,
        limits: ToolLimits | None = None,
        hidden_paths: Iterable[Path] = (),
    ) -> None:
        self._tools = {t.spec.name: t for t in tools}
        self.limits = limits if limits is not None else ToolLimits.from_settings()
        # Server paths never shown to the model or the user (the workspace's root).
        self._hidden = sorted(
            {str(v) for p in hidden_paths for v in (Path(p), Path(p).resolve())},
            key=len,
            reverse=True,
        )

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def plan_step(self, calls: Sequence[ToolCall]) -> list[tuple[ToolCall, ToolOutcome | None]]:
        """The calls of one model step, each with a refusal or None (run it).

        Beyond ``calls_per_step`` calls, or when a call's arguments (or the step's) are too
        large, a call is refused with an error result, and its arguments are replaced by
        ``{}`` so they are neither stored nor re-sent. Every call keeps its place and id,
        so every call still gets exactly one result."""
        limits = self.limits
        planned: list[tuple[ToolCall, ToolOutcome | None]] = []
        admitted = step_bytes = 0
        for index, call in enumerate(calls, 1):
            size = _size(call.arguments)
            reason = None
            if admitted >= limits.calls_per_step:
                reason = (
                    f"not run: at most {limits.calls_per_step} tool calls are run per step "
                    f"(this was call {index} of {len(calls)}); make it again in a later step"
                )
            elif size > limits.argument_bytes:
                reason = _too_large(size, limits.argument_bytes)
            elif step_bytes + size > limits.step_argument_bytes:
                reason = (
                    f"not run: the arguments of this step's tool calls would exceed "
                    f"{limits.step_argument_bytes} bytes together; make it again in a "
                    "later step"
                )
            if reason is None:
                admitted += 1
                step_bytes += size
                planned.append((call, None))
            else:
                kept = replace(call, arguments="{}") if call.arguments not in ("", "{}") else call
                note = " (its arguments were not kept)" if kept is not call else ""
                planned.append((kept, ToolOutcome(reason + note, is_error=True)))
        return planned

    async def execute(self, call: ToolCall) -> ToolOutcome:
        outcome = await self._execute(call)
        if outcome.is_error:
            return ToolOutcome(self._hide_paths(outcome.content), is_error=True)
        return outcome

    async def _execute(self, call: ToolCall) -> ToolOutcome:
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolOutcome(f"unknown tool {call.name!r}", is_error=True)
        size = _size(call.arguments or "")
        if size > self.limits.argument_bytes:
            return ToolOutcome(_too_large(size, self.limits.argument_bytes), is_error=True)
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolOutcome(f"arguments are not valid JSON: {exc.msg}", is_error=True)
        except RecursionError:
            return ToolOutcome("arguments are nested too deeply", is_error=True)
        if not isinstance(args, dict):
            return ToolOutcome("arguments must be a JSON object", is_error=True)
        timeout = self.limits.timeout_seconds
        token = _DEADLINE.set(time.monotonic() + timeout)
        try:
            _check_arguments(tool.spec.parameters, args)
            return ToolOutcome(await asyncio.wait_for(self._run(tool, args), timeout))
        except (TimeoutError, ToolTimeout):
            return ToolOutcome(
                f"{call.name} took longer than {timeout:g} s and was stopped; "
                "try a smaller task (a narrower path, a simpler pattern)",
                is_error=True,
            )
        except ToolError as exc:
            return ToolOutcome(str(exc), is_error=True)
        except OSError as exc:  # never the server's paths: only what went wrong
            reason = exc.strerror or "the file operation failed"
            return ToolOutcome(f"{call.name} failed: {reason}", is_error=True)
        except Exception:  # a tool bug must not kill the turn, nor show its insides
            logger.exception("tool %s failed", call.name)
            return ToolOutcome(
                f"{call.name} failed on the server; try other arguments or another way",
                is_error=True,
            )
        finally:
            _DEADLINE.reset(token)

    async def _run(self, tool: Tool, args: dict[str, Any]) -> str:
        if inspect.iscoroutinefunction(tool.handler):
            return await tool.handler(**args)
        blocking = cast(Callable[..., str], tool.handler)
        # The copied context carries the deadline into the worker thread.
        work = functools.partial(contextvars.copy_context().run, _in_time, blocking, args)
        return await asyncio.get_running_loop().run_in_executor(_POOL, work)

    def _hide_paths(self, text: str) -> str:
        for path in self._hidden:
            text = text.replace(path + os.sep, "").replace(path, ".")
        return text


def _in_time(handler: Callable[..., str], args: dict[str, Any]) -> str:
    check_deadline()  # waited in the pool's queue past the limit: do nothing
    return handler(**args)


def _size(arguments: str) -> int:
    return len(arguments.encode("utf-8", errors="surrogatepass"))


def _too_large(size: int, limit: int) -> str:
    return f"not run: its arguments are {size} bytes; the limit is {limit} bytes per tool call"


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
