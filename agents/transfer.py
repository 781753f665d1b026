"""Import and export of sessions as OpenAI-format JSON (the commands' logic); an import
of the product's own file (``agents.chat_archive``) keeps every mark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction

from agents.chat_archive import ArchiveError, archive_import, is_archive, parse_archive
from agents.message_format import MessageFormatError, message_to_json, parse_openai_messages
from agents.models import Agent, ChatSession
from agents.selectors import history_load
from agents.services import messages_bulk_append, session_create
from agents.storable import has_unstorable


class SessionIOError(ValueError):
    """Bad input for an import or export; the message says what to fix."""


def _user(username: str | None) -> Any:
    User = get_user_model()
    if username:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise SessionIOError(f"no user named {username!r}")
        return user
    supers = list(User.objects.filter(is_superuser=True)[:2])
    if len(supers) != 1:
        raise SessionIOError("pass --user USERNAME (there is not exactly one superuser)")
    return supers[0]


def session_import(
    *, path: Path, agent_id: int, username: str | None = None, title: str | None = None
) -> tuple[ChatSession, int]:
    """A new session holding the messages of ``path``; anything wrong is a one-line
    ``SessionIOError`` and writes nothing. Tool-call ids over 200 characters are stored
    shortened, call and result alike (``agents.storable``)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SessionIOError(f"no such file: {path}") from None
    except OSError as exc:
        raise SessionIOError(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionIOError(f"{path} is not valid UTF-8 JSON: {exc}") from None
    except RecursionError:
        raise SessionIOError(f"{path} is nested too deeply to be a message list") from None
    if is_archive(raw):  # the product's own file: every mark kept (``agents.chat_archive``)
        return _archive_import(raw, agent_id, username, title or path.stem)
    try:
        rows = parse_openai_messages(raw)
    except MessageFormatError as exc:
        raise SessionIOError(str(exc)) from None
    except RecursionError:
        raise SessionIOError("a message is nested too deeply") from None
    for index, row in enumerate(rows):
        _check_text(index, row)
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        raise SessionIOError(f"no agent with id {agent_id}")
    user = _user(username)
    try:
        with transaction.atomic():
            session = session_create(owner=user, agent=agent, title=title or path.stem)
            messages_bulk_append(session=session, rows=rows)
    except DatabaseError as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SessionIOError(f"the session could not be stored: {first_line}") from None
    return session, len(rows)


def _archive_import(
    raw: Any, agent_id: int, username: str | None, title: str
) -> tuple[ChatSession, int]:
    try:
        archive = parse_archive(raw)
    except ArchiveError as exc:
        raise SessionIOError(str(exc)) from None
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        raise SessionIOError(f"no agent with id {agent_id}")
    session = archive_import(
        archive=archive, owner=_user(username), agent=agent, title=archive.title or title
    )
    return session, len(archive.rows)


def _check_text(index: int, row: dict[str, Any]) -> None:
    """Refuse what no database stores, naming the message (a NUL, a lone surrogate)."""
    texts = [row.get("content") or "", row.get("tool_call_id") or ""]
    for call in row.get("tool_calls") or ():
        texts += [str(v) for v in call.values()]
    for text in texts:
        if "\x00" in text:
            raise SessionIOError(f"message {index}: contains a NUL character")
        if has_unstorable(text):
            raise SessionIOError(f"message {index}: contains invalid Unicode")


def session_export(*, session: ChatSession, view: str) -> list[dict[str, Any]]:
    out = []
    for message in history_load(session=session, view=view):  # type: ignore[arg-type]
        data = message_to_json(message, view=view)
        data.pop("position", None)
        data.pop("pruned", None)
        data.setdefault("tool_calls", [])
        data.setdefault("tool_call_id", None)
        out.append(data)
    return out


def session_by_id(session_id: str) -> ChatSession:
    import uuid

    try:
        key = uuid.UUID(str(session_id))
    except ValueError:
        raise SessionIOError(f"unknown session {session_id}") from None
    session = (
        ChatSession.objects.select_related("model_channel", "agent__model_channel")
        .filter(pk=key)
        .first()
    )
    if session is None:
        raise SessionIOError(f"unknown session {session_id}")
    return session
