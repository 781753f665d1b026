"""The tools a chat turn gives the model, in one place: the turn binds them, and the context
breakdown counts their definitions (issue 17 item 11), so the two cannot drift apart."""

from __future__ import annotations

from agents.events import MeterReading
from agents.meter import VisibleTokens, meter_read
from agents.models import ChatSession
from agents.tools import TodoStore, ToolRegistry, Workspace, default_registry
from agents.tools.workspace import session_workspace_root
from llm import ToolSpec
from recall.tools import recall_tools


def turn_registry(session: ChatSession, todos: TodoStore) -> ToolRegistry:
    """The built-in tools over the session's workspace and ``todos``, then the recall tools
    bound to the session (its agent loaded)."""
    workspace = Workspace(session_workspace_root(session.pk))
    return default_registry(workspace, todos, extra=recall_tools(session))


def turn_tool_specs(session: ChatSession) -> tuple[ToolSpec, ...]:
    """The definitions a turn of ``session`` sends (no file is touched)."""
    return turn_registry(session, TodoStore()).specs


def context_reading(*, session: ChatSession, visible: VisibleTokens | None = None) -> MeterReading:
    """The token bar's reading with its breakdown (one aggregate query unless ``visible``
    is given)."""
    return meter_read(session=session, visible=visible, tools=turn_tool_specs(session))
