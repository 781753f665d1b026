"""The tools a chat turn gives the model, in one place (issue 23: the meter publishes
itself from the domain).

The built-in tools live here; a higher layer adds the tools it binds to a session
(``recall.tools``) by registering a provider in its ``AppConfig.ready()``. The turn binds
``turn_registry`` and the token bar's breakdown counts ``turn_tool_specs`` — the same
list, so the two cannot drift apart, and any code that changes the bar can publish it
without knowing which layer added which tool."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agents.models import ChatSession
from agents.tools import TodoStore, Tool, ToolRegistry, Workspace, default_registry
from agents.tools.workspace import session_workspace_root
from llm import ToolSpec

SessionTools = Callable[[ChatSession], Sequence[Tool]]

_providers: list[SessionTools] = []


def register_session_tools(provider: SessionTools) -> None:
    """Add the tools ``provider`` binds to a session to every turn (idempotent)."""
    if provider not in _providers:
        _providers.append(provider)


def turn_registry(session: ChatSession, todos: TodoStore) -> ToolRegistry:
    """The built-in tools over the session's workspace and ``todos``, then every registered
    provider's tools bound to the session (its agent loaded)."""
    workspace = Workspace(session_workspace_root(session.pk))
    extra = [tool for provider in _providers for tool in provider(session)]
    return default_registry(workspace, todos, extra=extra)


def turn_tool_specs(session: ChatSession) -> tuple[ToolSpec, ...]:
    """The definitions a turn of ``session`` sends (no file is touched)."""
    return turn_registry(session, TodoStore()).specs
