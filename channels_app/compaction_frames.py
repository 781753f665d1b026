"""The socket's compaction controls — ``undo``, ``preview_accept``, ``preview_discard`` — over
the domain's own functions (``compaction.undo``, ``compaction.preview``, the ones REST
calls): each returns None when the domain did it (its events went to the session's group
after the commit), else the ``error`` event this socket is told. Only the translation of
the domain's refusals lives here.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from agents.access import SessionNotFound, session_for_user
from agents.events import ErrorEvent
from agents.reasons import wire_text
from compaction.preview import PreviewNotFound, PreviewRefused, preview_accept, preview_discard
from compaction.undo import RecordNotFound, UndoRefused, compaction_undo

User = AbstractBaseUser | AnonymousUser


def unknown_session(raw_session_id: str) -> ErrorEvent:
    """An unknown session and someone else's look the same (ids cannot be probed)."""
    return ErrorEvent("no such session", "unknown_session", raw_session_id[:64])


@database_sync_to_async
def undo(user: User, session_id: str, record_id: int | None) -> ErrorEvent | None:
    """Undo the compaction ``record_id`` (None: the latest one in effect)."""
    try:
        compaction_undo(
            session=session_for_user(user=user, session_id=session_id), record_id=record_id
        )
    except SessionNotFound:
        return unknown_session(session_id)
    except RecordNotFound:
        return ErrorEvent(wire_text("nothing_to_undo"), "nothing_to_undo", session_id)
    except UndoRefused as exc:
        return ErrorEvent(exc.error, exc.reason, session_id)
    return None


@database_sync_to_async
def accept_preview(
    user: User, session_id: str, preview_id: int, summary: str | None
) -> ErrorEvent | None:
    """Apply a preview (``summary``: an edited text for its body)."""
    try:
        session = session_for_user(user=user, session_id=session_id)
        preview_accept(session=session, preview_id=preview_id, editor=user, summary=summary)
    except SessionNotFound:
        return unknown_session(session_id)
    except PreviewNotFound:
        # gone, or never this chat's: the history it stood for has moved on
        return ErrorEvent(wire_text("history_changed"), "history_changed", session_id)
    except PreviewRefused as exc:
        return ErrorEvent(exc.error, exc.reason, session_id)
    return None


@database_sync_to_async
def discard_preview(user: User, session_id: str, preview_id: int) -> ErrorEvent | None:
    """Drop a preview; one that is gone already is no error."""
    try:
        session = session_for_user(user=user, session_id=session_id)
        preview_discard(session=session, preview_id=preview_id)
    except SessionNotFound:
        return unknown_session(session_id)
    except PreviewNotFound:
        pass
    return None
