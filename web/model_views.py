"""The chat header's model picker (issue 26 item 3): a CSRF-protected page POST through the
one access gate and ``web.model_switch``. The answer is the picker again — with the
question "compact first?" when the history no longer fits the chosen model, or why the
switch failed — and the token bar out of band (other pages of the chat get it through
the socket's ``token_update``)."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_http_methods

from agents import reasons
from agents.chat_model import ModelFit, ModelSwitchRefused, chat_channel_choices
from agents.meter import token_update
from agents.models import ChatSession
from web.model_switch import switch_chat_model
from web.page_access import HtmxHttpRequest, own_session
from web.pin_views import meter_fragments

PICKER = "chat/partials/model_switch.html"


def picker_context(session: ChatSession, **extra: Any) -> dict[str, Any]:
    """What the picker shows: the channels a chat may use, the chat's choice, its agent's."""
    return {
        "session": session,
        "agent": session.agent,
        "model_choices": list(chat_channel_choices()),
        **extra,
    }


@require_http_methods(["GET", "POST"])
def chat_model(request: HtmxHttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """GET: the picker (Cancel of the question). POST ``model_channel`` (an id, or empty for
    the agent's) and ``compact_first``: switch."""
    session = own_session(request, session_id)
    if request.method == "GET":
        return _picker(request, session)
    raw = request.POST.get("model_channel", "")
    channel_id = int(raw) if raw.isdigit() and 0 < int(raw) < 2**63 else None
    if raw and channel_id is None:
        return _picker(request, session, error=reasons.message("unknown_channel"), status=400)
    try:
        switched = switch_chat_model(
            session=session,
            channel_id=channel_id,
            compact_first=request.POST.get("compact_first") == "1",
        )
    except ModelSwitchRefused as refused:
        if refused.reason == "history_too_large" and refused.fit is not None:
            return _picker(request, session, wanted=channel_id, too_large=_figures(refused.fit))
        status = reasons.http_status(refused.reason)
        return _picker(request, session, error=reasons.message(refused.reason), status=status)
    if not request.htmx:
        return redirect("chat:session", session_id=session.pk)
    session = switched.session
    fragments = meter_fragments(session, token_update(str(session.pk)))
    return _picker(request, session, compacted=switched.compacted, oob=fragments)


def _figures(fit: ModelFit) -> dict[str, str]:
    return {
        "tokens": f"{fit.tokens:,}",
        "threshold": f"{fit.threshold:,}",
        "window": f"{fit.window:,}",
    }


def _picker(
    request: HtmxHttpRequest,
    session: ChatSession,
    *,
    status: int = 200,
    oob: str = "",
    **extra: Any,
) -> HttpResponse:
    html = render_to_string(PICKER, picker_context(session, **extra), request=request)
    return HttpResponse(html + oob, status=status)
