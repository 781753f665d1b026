"""Chat files from the UI and the API (issue 26 item 5): export as the product's own JSON
(``agents.chat_archive``), plain OpenAI JSON (``agents.transfer``) or Markdown; import either
JSON format into a new chat of the caller's, with a clear error and nothing written for a bad
file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction

from agents.access import agent_for_user, agents_for_user
from agents.branches import other_versions
from agents.chat_archive import (
    Archive,
    ArchiveError,
    archive_import,
    archive_of,
    is_archive,
    parse_archive,
)
from agents.message_format import MessageFormatError, parse_openai_messages
from agents.models import Agent, ChatSession, Message, MessageFork, Role
from agents.selectors import history_load
from agents.services import messages_bulk_append, session_create
from agents.transfer import _check_text, session_export

MAX_FILE_BYTES = 20 * 1024 * 1024
EXPORT_FORMATS = ("netaclaw", "openai", "markdown")


class ChatFileError(ValueError):
    """A file or request the import refuses; the message says what to fix."""


@dataclass(frozen=True)
class ExportedFile:
    body: str
    content_type: str
    filename: str


def export_chat(*, session: ChatSession, fmt: str = "netaclaw", view: str = "full") -> ExportedFile:
    """The chat as a file: ``netaclaw`` (lossless, re-importable), ``openai`` (messages of
    ``view``) or ``markdown`` (to read; ``view`` too)."""
    stem = _filename_stem(session)
    if fmt == "netaclaw":
        body = json.dumps(archive_of(session), ensure_ascii=False, indent=1)
        return ExportedFile(body, "application/json", f"{stem}.netaclaw.json")
    if fmt == "openai":
        body = json.dumps(session_export(session=session, view=view), ensure_ascii=False, indent=1)
        return ExportedFile(body, "application/json", f"{stem}.openai.json")
    if fmt == "markdown":
        return ExportedFile(markdown_of(session, view), "text/markdown", f"{stem}.md")
    raise ChatFileError(f"unknown format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")


def _filename_stem(session: ChatSession) -> str:
    keep = "".join(c if c.isalnum() or c in "-_" else "-" for c in (session.title or "chat"))
    return (keep.strip("-")[:60] or "chat") + f"-{str(session.pk)[:8]}"


_HEADINGS: dict[str, str] = {
    Role.USER: "User",
    Role.ASSISTANT: "Assistant",
    Role.TOOL: "Tool",
    Role.SYSTEM: "System",
}


def markdown_of(session: ChatSession, view: str = "full") -> str:
    """A readable transcript: one heading per message, tool calls and outputs fenced,
    summaries and compacted originals marked; then the versions a regenerate or an edit
    set aside (issue 26 item 1), each under its fork."""
    lines = [f"# {session.title or 'Chat'}", "", f"Agent: {session.agent.name}", ""]
    for message in history_load(session=session, view=view):  # type: ignore[arg-type]
        lines += _markdown_message(message, "##")
    others = other_versions(
        session=session,
        fork_ids=MessageFork.objects.filter(session=session).values_list("pk", flat=True),
    )
    if others:
        lines += ["# Other versions", ""]
    for number, fork_id in enumerate(sorted(others), start=1):
        for version in others[fork_id]:
            lines += [f"## Fork {number} · version {version.version}", ""]
            for message in version.messages:
                lines += _markdown_message(message, "###")
    return "\n".join(lines).rstrip() + "\n"


def _markdown_message(message: Message, level: str) -> list[str]:
    heading = _HEADINGS.get(message.role, message.role)
    if message.is_compaction_summary:
        heading = "Compaction summary"
    elif (message.metadata or {}).get("systemType"):
        heading = f"Record ({message.metadata['systemType']})"
    marks = [m for m, on in (("compacted", message.compacted_at), ("pinned", message.pinned)) if on]
    stamp = message.created_at.strftime("%Y-%m-%d %H:%M") if message.created_at else ""
    lines = [f"{level} {heading}" + (f" · {', '.join(marks)}" if marks else "") + f" — {stamp}", ""]
    body = message.content or ""
    if message.role == Role.TOOL:
        lines += [_fence(body), ""]
    elif body:
        lines += [body, ""]
    for call in message.tool_calls or ():
        lines += [
            f"Tool call `{call.get('name', '')}`:",
            "",
            _fence(str(call.get("arguments", ""))),
            "",
        ]
    return lines


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def import_chat(*, user: Any, raw: bytes, agent_id: Any = None, title: str = "") -> ChatSession:
    """A new chat of ``user`` from a file's bytes: a ``netaclaw.chat`` file (its agent: the
    one asked for, else the user's agent of the file's agent's name) or OpenAI messages (a
    list, or ``{"messages": [...]}``; the agent asked for, else the user's first)."""
    if len(raw) > MAX_FILE_BYTES:
        raise ChatFileError(f"the file is over {MAX_FILE_BYTES // (1024 * 1024)} MB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ChatFileError("the file is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ChatFileError(f"the file is not JSON: {exc}") from None
    except RecursionError:
        raise ChatFileError("the file is nested too deeply to be a chat") from None
    try:
        if is_archive(data):
            archive = parse_archive(data)
            agent = _agent(user, agent_id, archive.agent_name)
            return archive_import(archive=archive, owner=user, agent=agent, title=title)
        return _import_openai(user, data, agent_id, title)
    except ArchiveError as exc:
        raise ChatFileError(str(exc)) from None
    except DatabaseError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ChatFileError(f"the chat could not be stored: {first}") from None


def _import_openai(user: Any, data: Any, agent_id: Any, title: str) -> ChatSession:
    if isinstance(data, dict) and "messages" in data:
        title = title or str(data.get("title") or "")
        data = data["messages"]
    try:
        rows = parse_openai_messages(data)
    except MessageFormatError as exc:
        raise ChatFileError(str(exc)) from None
    except RecursionError:
        raise ChatFileError("a message is nested too deeply") from None
    for index, row in enumerate(rows):
        try:
            _check_text(index, row)
        except ValueError as exc:
            raise ChatFileError(str(exc)) from None
    agent = _agent(user, agent_id, "")
    first_user = next((r["content"] for r in rows if r["role"] == Role.USER), "")
    with transaction.atomic():
        session = session_create(
            owner=user, agent=agent, title=title or first_user[:60] or "Imported"
        )
        messages_bulk_append(session=session, rows=rows)
    return session


def _agent(user: Any, agent_id: Any, name: str) -> Agent:
    if agent_id not in (None, ""):
        try:
            return agent_for_user(user=user, agent_id=agent_id)
        except LookupError:
            raise ChatFileError(f"no agent {agent_id} of yours") from None
    agents = agents_for_user(user=user).order_by("pk")
    found = agents.filter(name=name).first() if name else None
    found = found or agents.first()
    if found is None:
        raise ChatFileError("you have no agent to import the chat into")
    return found


__all__ = ["Archive", "ChatFileError", "ExportedFile", "export_chat", "import_chat", "markdown_of"]
