"""The one gate of the chat pages: a user reaches only their own chats (a foreign or unknown
id is a 404, never a 403 that would confirm it exists)."""

from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest
from django.utils.translation import gettext as _
from django_htmx.middleware import HtmxDetails

from agents.access import SessionNotFound, session_for_user
from agents.models import ChatSession


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def own_session(request: HttpRequest, session_id: uuid.UUID | str) -> ChatSession:
    try:
        return session_for_user(user=request.user, session_id=session_id)
    except SessionNotFound as exc:
        raise Http404(_("No such chat.")) from exc
