"""The recall tools of one chat turn, bound to its session (CONTRACT §7).

``search_history`` and ``read_history_message`` (the agent's ``search_history_enabled``
switch, on by default) and ``context_status`` (always). Each call reads the database in
the thread the ORM uses (``database_sync_to_async``), so a tool call never blocks the
event loop; the session is the turn's, so a model can reach no other chat.
"""

from __future__ import annotations

import json

from channels.db import database_sync_to_async

from agents.models import ChatSession
from agents.tools import Tool, ToolError
from llm import ToolSpec
from recall import search
from recall.status import context_status

SEARCH_HISTORY = ToolSpec(
    "search_history",
    "Search this chat's earlier messages that compaction took out of your context: user and "
    "assistant messages, tool calls and tool outputs (the originals, not only what the "
    'summary kept). Give a few distinctive words or an exact "quoted phrase", in any '
    "language. Returns the best hits with message id, role, time and a snippet; read one "
    "in full with read_history_message.",
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": 'Words or "exact phrases" to look for.',
            },
            "limit": {
                "type": "integer",
                "description": f"Most hits to return (1–{search.MAX_LIMIT}, default "
                f"{search.DEFAULT_LIMIT}).",
            },
        },
        "required": ["query"],
    },
)

READ_HISTORY_MESSAGE = ToolSpec(
    "read_history_message",
    "Read the full original text of one earlier message of this chat by its id (from "
    "search_history, or a #id the summary names). Long messages come in pages of "
    f"{search.PAGE_CHARS} characters.",
    {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "description": "The message id."},
            "page": {"type": "integer", "description": "Page number, from 1 (default 1)."},
        },
        "required": ["id"],
    },
)

CONTEXT_STATUS = ToolSpec(
    "context_status",
    "How full your context window is: tokens used, the automatic compaction threshold, "
    "the window's size, and whether a compaction is due before your next step (the same "
    "figures as the user's token bar). Use it to wrap up before the limit.",
    {"type": "object", "properties": {}},
)


def _session(session_id: str) -> ChatSession:
    return ChatSession.objects.select_related("model_channel", "agent__model_channel").get(
        pk=session_id
    )


@database_sync_to_async
def _search(session_id: str, query: str, limit: int | None) -> str:
    try:
        return search.search_result(session=_session(session_id), query=query, limit=limit)
    except search.RecallError as exc:
        raise ToolError(str(exc)) from None


@database_sync_to_async
def _read(session_id: str, message_id: int, page: int | None) -> str:
    try:
        return search.read_result(session=_session(session_id), message_id=message_id, page=page)
    except search.RecallError as exc:
        raise ToolError(str(exc)) from None


@database_sync_to_async
def _status(session_id: str) -> str:
    return json.dumps(context_status(_session(session_id)))


def recall_tools(session: ChatSession) -> list[Tool]:
    """The recall tools for a turn of ``session`` (its agent loaded)."""
    session_id = str(session.pk)

    async def search_history(query: str, limit: int | None = None) -> str:
        return await _search(session_id, query, limit)

    async def read_history_message(id: int, page: int | None = None) -> str:
        return await _read(session_id, id, page)

    async def context_status_tool() -> str:
        return await _status(session_id)

    tools = [Tool(CONTEXT_STATUS, context_status_tool)]
    if session.agent.search_history_enabled:
        tools[:0] = [
            Tool(SEARCH_HISTORY, search_history),
            Tool(READ_HISTORY_MESSAGE, read_history_message),
        ]
    return tools
