"""The session's todo list (the seed's todoStore); the gateway persists it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents.tools.registry import ToolError

STATUSES = ("pending", "in_progress", "completed")


@dataclass
class TodoStore:
    items: list[dict[str, Any]] = field(default_factory=list)

    async def todo_write(self, todos: list[Any]) -> str:
        cleaned: list[dict[str, Any]] = []
        for i, item in enumerate(todos):
            if not isinstance(item, dict) or not isinstance(item.get("content"), str):
                raise ToolError(f"todo {i} needs a string 'content'")
            status = item.get("status", "pending")
            if status not in STATUSES:
                raise ToolError(f"todo {i}: status must be one of {', '.join(STATUSES)}")
            cleaned.append({"content": item["content"].strip()[:500], "status": status})
        if len(cleaned) > 100:
            raise ToolError("at most 100 todos")
        self.items = cleaned
        return json.dumps(cleaned, ensure_ascii=False)
