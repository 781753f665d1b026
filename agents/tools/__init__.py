"""Built-in tools: a confined per-session workspace and the todo list."""

from __future__ import annotations

from agents.tools.registry import Tool, ToolError, ToolOutcome, ToolRegistry
from agents.tools.todo import TodoStore
from agents.tools.workspace import Workspace
from llm import ToolSpec

_PATH = {"type": "string", "description": "Path relative to the workspace root."}


def default_registry(workspace: Workspace, todos: TodoStore) -> ToolRegistry:
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
                    "Search the workspace's files for a regular expression or text.",
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
        ]
    )


__all__ = [
    "TodoStore",
    "Tool",
    "ToolError",
    "ToolOutcome",
    "ToolRegistry",
    "Workspace",
    "default_registry",
]
