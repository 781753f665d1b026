"""Pages of the chat domain. Thin: read through the access gate and selectors, write
through services; presentation values come from ``web.presentation``."""

from __future__ import annotations

import uuid
from typing import TypedDict

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from agents.access import agents_for_user, sessions_for_user
from agents.branches import messages_json
from agents.chat_files import ChatFileError, import_chat
from agents.chat_model import chat_channel_choices
from agents.configuration import agent_editable
from agents.history_pages import (
    PAGE_SIZE,
    MessageNotFound,
    history_page,
    message_for_session,
    page_size_through,
)
from agents.leases import TURN, holder_kind
from agents.message_format import message_to_json
from agents.meter import VisibleTokens, context_reading, meter_read
from agents.models import Agent, ChatSession, ModelChannel
from agents.selectors import (
    HistoryView,
    last_user_message_at,
    lease_expiry,
    queued_messages,
)
from agents.services import session_delete as session_delete_service
from agents.services import session_rename as session_rename_service
from agents.usage import session_usage
from compaction.auxiliary import AuxiliaryError, resolve_channel
from compaction.trigger import suggestion_standing
from recall.chats import SearchRefused, search_chats
from web.chat_forms import RenameChatForm
from web.chat_groups import DateGroup, by_date
from web.forms import NewChatForm
from web.page_access import HtmxHttpRequest, own_session
from web.presentation import MessageView, MeterView, channel_label, message_view

SIDEBAR_SIZE = 50


def _history_view(request: HttpRequest) -> HistoryView:
    return "full" if request.GET.get("view") == "full" else "compacted"


def _channel_missing(agent: Agent) -> bool:
    channel = agent.model_channel
    return channel is None or not channel.enabled


class Sidebar(TypedDict):
    """The chat list beside every chat page."""

    sidebar_sessions: list[ChatSession]
    sidebar_groups: list[DateGroup]  # the same chats by date: Today, Yesterday…
    agents: list[Agent]  # those that can answer first: the new-chat select's order


class HistoryPage(TypedDict):
    """One page of a chat's messages (the page, and its "load earlier" fragment)."""

    page_messages: list[MessageView]
    has_earlier: bool
    first_id: int | None
    session_id: str
    view: HistoryView


class ChatAgent(TypedDict):
    """What the chat page shows of its agent, saved chat or not."""

    agent: Agent
    channel_missing: bool
    can_edit_agent: bool
    current_agent_id: int
    waiting_model: str
    waiting_auxiliary: str


def _sidebar(request: HttpRequest) -> Sidebar:
    # Agents that can answer come first in the new-chat select.
    agents = sorted(
        agents_for_user(user=request.user).select_related("model_channel"),
        key=_channel_missing,
    )
    sessions = list(sessions_for_user(user=request.user).select_related("agent")[:SIDEBAR_SIZE])
    return {
        "sidebar_sessions": sessions,
        "sidebar_groups": by_date(sessions),
        "agents": agents,
    }


def _page_context(
    session: ChatSession, view: HistoryView, before_id: int | None, size: int = PAGE_SIZE
) -> HistoryPage:
    page = history_page(session=session, view=view, before_id=before_id, size=size)
    return {
        "page_messages": [
            message_view(row)
            for row in messages_json(session=session, messages=page.messages, view=view)
        ],
        "has_earlier": page.has_earlier,
        "first_id": page.first_id,
        "session_id": str(session.pk),
        "view": view,
    }


def _turn_running(session: ChatSession) -> bool:
    """A chat turn of the session runs now, in some process (it holds the lease)."""
    held = lease_expiry(session_id=session.pk)
    return held is not None and holder_kind(held[0]) == TURN


@require_GET
def chat_search(request: HtmxHttpRequest) -> HttpResponse:
    """The user's chats and messages matching ``q``: the sidebar's results (a fragment,
    for its script) or, without script, a page of them."""
    query = request.GET.get("q", "")
    try:
        found, refusal = search_chats(user=request.user, query=query), ""
    except SearchRefused:
        found, refusal = None, _("Type at least two characters to search.")
    context: dict[str, object] = {"found": found, "refusal": refusal, "search_query": query}
    if request.headers.get("X-Fragment") == "search":
        return render(request, "chat/partials/search_results.html", context)
    return render(request, "chat/search.html", {**_sidebar(request), **context})


@require_POST
def chat_import(request: HtmxHttpRequest) -> HttpResponse:
    """The chat list's Import form: a new chat from a file; a bad file is said on the list
    and nothing is written."""
    upload = request.FILES.get("file")
    if upload is None:
        messages.error(request, _("Choose a chat file to import."))
        return redirect("chat:index")
    try:
        session = import_chat(
            user=request.user, raw=upload.read(), agent_id=request.POST.get("agent") or None
        )
    except ChatFileError as exc:
        messages.error(request, _("The file was not imported: %(why)s") % {"why": exc})
        return redirect("chat:index")
    return redirect("chat:session", session.pk)


@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    sidebar = _sidebar(request)
    context = {
        **sidebar,
        "sessions": sidebar["sidebar_sessions"],
        "agents_without_channel": [a for a in sidebar["agents"] if _channel_missing(a)],
        "current_session_id": "",
    }
    return render(request, "chat/session_list.html", context)


def _new_chat_agent(
    request: HtmxHttpRequest, params: QueryDict, listed: list[Agent]
) -> Agent | None:
    """The agent a new chat talks to: the one of ``from_session`` (404 for a chat not the
    user's), the chosen ``agent``, or — asked for none — the first of ``listed`` (the
    sidebar's, those that can answer first)."""
    from_session = params.get("from_session")
    if from_session:
        return own_session(request, from_session).agent
    if "agent" not in params:
        return listed[0] if listed else None
    form = NewChatForm(params, agents=agents_for_user(user=request.user))
    return form.cleaned_data["agent"] if form.is_valid() else None


def _auxiliary_channel(agent: Agent) -> ModelChannel | None:
    """The model a compaction of this agent's chats would summarize with, if any."""
    try:
        return resolve_channel(agent)
    except AuxiliaryError:
        return None


def _chat_context(
    request: HtmxHttpRequest, agent: Agent, session: ChatSession | None = None
) -> ChatAgent:
    """The agent's (a chat's own model, issue 26 item 3, over its agent's)."""
    channel = session.channel if session is not None else agent.model_channel
    return {
        "agent": agent,
        "channel_missing": channel is None or not channel.enabled,
        "can_edit_agent": agent_editable(user=request.user, agent=agent),
        "current_agent_id": agent.pk,
        "waiting_model": channel_label(channel),
        "waiting_auxiliary": channel_label(_auxiliary_channel(agent)),
    }


@require_http_methods(["GET", "POST"])
def session_new(request: HtmxHttpRequest) -> HttpResponse:
    """A new chat with the chosen agent (or the agent of ``from_session``): a page for a
    chat that is not stored yet. Its first message starts it (the socket's ``chat`` frame
    with ``agent``, ``chat.turn.accept_new_chat``), so New chat never leaves an empty chat
    behind. A POST (older pages) only sends the browser to that page."""
    params = request.POST if request.method == "POST" else request.GET
    sidebar = _sidebar(request)
    agent = _new_chat_agent(request, params, sidebar["agents"])
    if agent is None:
        messages.error(request, _("Choose one of your agents to start a chat."))
        return redirect("chat:index")
    if request.method == "POST":
        url = f"{reverse('chat:new')}?agent={agent.pk}"
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    unsaved = ChatSession(agent=agent)  # the meter of a chat with nothing in it yet
    context = {
        **sidebar,
        **_chat_context(request, agent),
        "session": None,
        "page_messages": [],
        "has_earlier": False,
        "view": "compacted",
        "meter": MeterView(meter_read(session=unsaved, visible=VisibleTokens(0, 0, 0))),
        "busy": False,
        "queued_messages": [],
        "current_session_id": "",
        "ws_url": "/ws/chat/html/",
    }
    return render(request, "chat/session.html", context)


@require_GET
def session_detail(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    session = own_session(request, session_id)
    view = _history_view(request)
    agent = session.agent
    busy = _turn_running(session)
    reading = context_reading(session=session)  # with its breakdown: the context panel
    found = _positive_query_int(request, "message")  # a search result: shown on the page
    size = page_size_through(session=session, view=view, message_id=found) if found else PAGE_SIZE
    context = {
        **_sidebar(request),
        **_page_context(session, view, None, size),
        "found_message_id": found,
        **_chat_context(request, agent, session),
        "model_choices": list(chat_channel_choices()),
        "session": session,
        "meter": MeterView(reading),
        "usage": session_usage(session=session),
        "suggest_compaction": suggestion_standing(session=session, reading=reading),
        # a turn runs (Stop is shown); messages sent meanwhile wait as chips under it
        "busy": busy,
        "busy_seconds": _turn_seconds(session) if busy else 0,
        "queued_messages": [
            message_view(message_to_json(m)) for m in queued_messages(session=session)
        ],
        "current_session_id": str(session.pk),
        "ws_url": f"/ws/chat/html/?session={session.pk}" + ("&view=full" if view == "full" else ""),
    }
    return render(request, "chat/session.html", context)


def _positive_query_int(request: HttpRequest, name: str) -> int | None:
    value = request.GET.get(name, "")
    return int(value) if value.isdigit() and 0 < int(value) < 2**63 else None


def _turn_seconds(session: ChatSession) -> int:
    """How long the running turn has waited so far: since the newest user message."""
    started = last_user_message_at(session=session)
    return max(0, int((timezone.now() - started).total_seconds())) if started else 0


def _back_to(request: HttpRequest, fallback: str, *, not_to: str = "") -> str:
    """The page a form came from (``next``, same site only), else ``fallback``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    if not safe or (not_to and target.split("?")[0] == not_to):
        return fallback
    return target


@require_http_methods(["GET", "POST"])
def session_rename(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Rename a chat: the page's dialog posts here; without script, a small form page."""
    session = own_session(request, session_id)
    form = RenameChatForm(request.POST or None, initial={"title": session.title})
    if request.method == "POST" and form.is_valid():
        session_rename_service(session=session, title=form.cleaned_data["title"])
        return redirect(_back_to(request, reverse("chat:session", args=[session.pk])))
    back = _back_to(request, "")
    cancel = back or reverse("chat:session", args=[session.pk])
    context = {"session": session, "form": form, "next": back, "cancel_url": cancel}
    return render(request, "chat/session_rename.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def session_delete(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Delete a chat with its messages and workspace, after a confirmation (the page's
    dialog, or this view's page without script)."""
    session = own_session(request, session_id)
    if request.method == "POST":
        own_page = reverse("chat:session", args=[session.pk])
        title = session.title or _("New chat")
        session_delete_service(session=session)
        messages.success(request, _("Deleted the chat “%(title)s”.") % {"title": title})
        return redirect(_back_to(request, reverse("chat:index"), not_to=own_page))
    back = _back_to(request, "")
    cancel = back or reverse("chat:session", args=[session.pk])
    context = {"session": session, "next": back, "cancel_url": cancel}
    return render(request, "chat/session_delete.html", context)


@require_GET
def session_messages(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The page of messages before ``?before=<message id>`` (the "load earlier" button)."""
    session = own_session(request, session_id)
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
    preview a socket event carried (the socket layer's framing)."""
    session = own_session(request, session_id)
    try:
        message = message_for_session(session=session, message_id=message_id)
    except MessageNotFound as exc:
        raise Http404(_("No such message.")) from exc
    view = message_view(message_to_json(message, view=_history_view(request)))
    context = {"m": view, "session_id": str(session.pk)}
    return render(request, "chat/partials/message.html", context)
