"""Pages of the chat domain. Thin: read through the access gate and selectors, write
through services; presentation values come from ``web.presentation``."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from agents.access import SessionNotFound, agents_for_user, session_for_user, sessions_for_user
from agents.configuration import agent_editable
from agents.history_pages import (
    MessageNotFound,
    history_page,
    message_for_session,
    summary_for_session,
)
from agents.message_format import message_to_json
from agents.meter import meter_read
from agents.models import Agent, ChatSession
from agents.selectors import HistoryView, queued_messages, turn_lease_expiry
from agents.services import session_create
from chat.control import TURN, holder_kind
from compaction.core.prompts import summary_body
from web.forms import NewChatForm
from web.presentation import MeterView, message_view

SIDEBAR_SIZE = 50


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _own_session(request: HttpRequest, session_id: Any) -> ChatSession:
    try:
        return session_for_user(user=request.user, session_id=session_id)
    except SessionNotFound as exc:
        raise Http404(_("No such chat.")) from exc


def _history_view(request: HttpRequest) -> HistoryView:
    return "full" if request.GET.get("view") == "full" else "compacted"


def _channel_missing(agent: Agent) -> bool:
    channel = agent.model_channel
    return channel is None or not channel.enabled


def _sidebar(request: HttpRequest) -> dict[str, Any]:
    # Agents that can answer come first in the new-chat select.
    agents = sorted(
        agents_for_user(user=request.user).select_related("model_channel"),
        key=_channel_missing,
    )
    return {
        "sidebar_sessions": sessions_for_user(user=request.user).select_related("agent")[
            :SIDEBAR_SIZE
        ],
        "agents": agents,
    }


def _page_context(session: ChatSession, view: HistoryView, before_id: int | None) -> dict[str, Any]:
    page = history_page(session=session, view=view, before_id=before_id)
    return {
        "page_messages": [message_view(message_to_json(m, view=view)) for m in page.messages],
        "has_earlier": page.has_earlier,
        "first_id": page.first_id,
        "session_id": str(session.pk),
        "view": view,
    }


def _turn_running(session: ChatSession) -> bool:
    """A chat turn of the session runs now, in some process (its turn lease is held)."""
    held = turn_lease_expiry(session_id=session.pk)
    return held is not None and holder_kind(held[0]) == TURN


@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    context = _sidebar(request)
    agents = context["agents"]
    context.update(
        {
            "agents": agents,
            "sessions": context["sidebar_sessions"],
            "agents_without_channel": [a for a in agents if _channel_missing(a)],
            "current_session_id": "",
        }
    )
    return render(request, "chat/session_list.html", context)


@require_POST
def session_new(request: HtmxHttpRequest) -> HttpResponse:
    """Create a chat with the chosen agent (or the agent of ``from_session``) and open it."""
    agent: Agent | None = None
    if request.POST.get("from_session"):
        agent = _own_session(request, request.POST["from_session"]).agent
    else:
        form = NewChatForm(request.POST, agents=agents_for_user(user=request.user))
        if form.is_valid():
            agent = form.cleaned_data["agent"]
        else:
            messages.error(request, _("Choose one of your agents to start a chat."))
            return redirect("chat:index")
    session = session_create(owner=request.user, agent=agent)
    url = reverse("chat:session", args=[session.pk])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@require_GET
def session_detail(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    session = _own_session(request, session_id)
    view = _history_view(request)
    agent = session.agent
    context = _sidebar(request)
    context.update(_page_context(session, view, None))
    context.update(
        {
            "session": session,
            "agent": agent,
            "meter": MeterView(meter_read(session=session)),
            # a turn runs (Stop is shown); messages sent meanwhile wait as chips under it
            "busy": _turn_running(session),
            "queued_messages": [
                message_view(message_to_json(m)) for m in queued_messages(session=session)
            ],
            "channel_missing": _channel_missing(agent),
            "can_edit_agent": agent_editable(user=request.user, agent=agent),
            "current_session_id": str(session.pk),
            "current_agent_id": agent.pk,
            "ws_url": f"/ws/chat/html/?session={session.pk}",
        }
    )
    return render(request, "chat/session.html", context)


@require_GET
def session_messages(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The page of messages before ``?before=<message id>`` (the "load earlier" button)."""
    session = _own_session(request, session_id)
    try:
        before_id = int(request.GET.get("before", ""))
    except ValueError as exc:
        raise Http404(_("No such message.")) from exc
    try:
        context = _page_context(session, _history_view(request), before_id)
    except MessageNotFound as exc:
        raise Http404(_("No such message.")) from exc
    return render(request, "chat/partials/message_list.html", context)


@require_GET
def message_detail(
    request: HtmxHttpRequest, session_id: uuid.UUID, message_id: int
) -> HttpResponse:
    """One whole message as its bubble: what "Show the whole message" swaps in for the
    preview a socket event carried (``channels_app.framing``)."""
    session = _own_session(request, session_id)
    try:
        message = message_for_session(session=session, message_id=message_id)
    except MessageNotFound as exc:
        raise Http404(_("No such message.")) from exc
    view = message_view(message_to_json(message, view=_history_view(request)))
    context = {"m": view, "session_id": str(session.pk)}
    return render(request, "chat/partials/message.html", context)


@require_GET
def summary_detail(
    request: HtmxHttpRequest, session_id: uuid.UUID, message_id: int
) -> HttpResponse:
    """A compaction summary as sanitized Markdown: the drawer (htmx) or a page."""
    session = _own_session(request, session_id)
    try:
        summary = summary_for_session(session=session, message_id=message_id)
    except MessageNotFound as exc:
        raise Http404(_("No such summary.")) from exc
    context = {
        "summary": summary,
        "summary_body": summary_body(summary.content),
        "replaced_count": summary.replaced.count(),
        "session_id": str(session.pk),
    }
    template = "chat/partials/summary_drawer.html" if request.htmx else "chat/summary_page.html"
    return render(request, template, context)
