"""Built-in tools: a confined per-session workspace and the todo list."""

from __future__ import annotations

from collections.abc import Sequence

from agents.tools.limits import ToolLimits
from agents.tools.registry import Tool, ToolError, ToolOutcome, ToolRegistry
from agents.tools.todo import TodoStore
from agents.tools.workspace import Workspace, remove_tree, session_workspace_root
from llm import ToolSpec

_PATH = {"type": "string", "description": "Path relative to the workspace root."}


def default_registry(
    workspace: Workspace,
    todos: TodoStore,
    limits: ToolLimits | None = None,
    *,
    extra: Sequence[Tool] = (),
) -> ToolRegistry:
    """The built-in tools over ``workspace``, within ``limits`` (the workspace's, which are
    the configured ones, unless given), then ``extra`` (tools a higher layer binds to the
    turn, e.g. ``recall.tools``)."""
    return ToolRegistry(
        [
            Tool(
                ToolSpec(
                    "list_files",
                    "List files and folders in the workspace.",
                    {"type": "object", "properties": {"path": _PATH}},
                ),
                workspace.list_files,
            ),
            Tool(
                ToolSpec(
                    "read_file",
                    "Read a text file from the workspace (up to 200 KB per call).",
                    {
                        "type": "object",
                        "properties": {
                            "path": _PATH,
                            "offset": {"type": "integer", "description": "Byte offset."},
                            "limit": {"type": "integer", "description": "Bytes to read."},
                        },
                        "required": ["path"],
                    },
                ),
                workspace.read_file,
            ),
            Tool(
                ToolSpec(
                    "write_file",
                    "Create or overwrite a text file in the workspace.",
                    {
                        "type": "object",
                        "properties": {"path": _PATH, "content": {"type": "string"}},
                        "required": ["path", "content"],
                    },
                ),
                workspace.write_file,
            ),
            Tool(
                ToolSpec(
                    "search_files",
                    "Search the workspace's files for a regular expression (RE2 syntax: no "
                    "backreferences or lookaround) or text.",
                    {
                        "type": "object",
                        "properties": {"pattern": {"type": "string"}, "path": _PATH},
                        "required": ["pattern"],
                    },
                ),
                workspace.search_files,
            ),
            Tool(
                ToolSpec(
                    "todo_write",
                    "Replace this chat's todo list.",
                    {
                        "type": "object",
                        "properties": {
                            "todos": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "content": {"type": "string"},
                                        "status": {
                                            "type": "string",
                                            "enum": ["pending", "in_progress", "completed"],
                                        },
                                    },
                                    "required": ["content", "status"],
                                },
                            }
                        },
                        "required": ["todos"],
                    },
                ),
                todos.todo_write,
            ),
            *extra,
        ],
        limits=limits if limits is not None else workspace.limits,
        hidden_paths=[workspace.root],
    )


__all__ = [
    "TodoStore",
    "Tool",
    "ToolError",
    "ToolLimits",
    "ToolOutcome",
    "ToolRegistry",
    "Workspace",
    "default_registry",
    "remove_tree",
    "session_workspace_root",
]
