"""Pin or unpin a message from its "⋯" menu on the chat page (issue 17 item 2).

A CSRF-protected page POST (htmx sends the token from ``<body hx-headers>``), through the one
access gate and ``compaction.controls.message_pin``; the answer is the bubble again, with its
"pinned" badge, and the meter out-of-band, since pins change what the token bar's tooltip and
the context panel show. Other tabs hear of it through ``message_updated``.
"""

from __future__ import annotations

import uuid

from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agents import reasons
from agents.events import MeterReading
from agents.history_pages import MessageNotFound
from agents.message_format import message_to_json
from agents.meter import token_update
from agents.models import ChatSession
from compaction.controls import EditRefused, message_pin
from web.page_access import HtmxHttpRequest, own_session
from web.presentation import MeterView, message_view

PARTIALS = "chat/partials/"
PINNED_VALUES = {"true": True, "false": False}


def meter_fragments(session: ChatSession, reading: MeterReading) -> str:
    """The token bar, the status line and the context panel's figures, swapped by id."""
    context = {"meter": MeterView(reading), "oob": True, "session_id": str(session.pk)}
    return "".join(
        render_to_string(PARTIALS + name, context)
        for name in ("token_bar.html", "meter_status.html", "context_breakdown.html")
    )


@require_POST
def message_pin_toggle(
    request: HtmxHttpRequest, session_id: uuid.UUID, message_id: int
) -> HttpResponse:
    """``pinned=true|false``: pin or unpin one message of the user's own chat."""
    session = own_session(request, session_id)
    pinned = PINNED_VALUES.get(request.POST.get("pinned", ""))
    if pinned is None:
        return HttpResponseBadRequest(_("Send pinned=true or pinned=false."))
    try:
        changed = message_pin(session=session, message_id=message_id, pinned=pinned)
    except MessageNotFound as exc:
        raise Http404(_("No such message.")) from exc
    except EditRefused as exc:  # a compaction runs: it would lose the pin
        return HttpResponse(reasons.message(exc.reason), status=reasons.http_status(exc.reason))
    # this page's meter (every tab's was published): pins move tokens between its parts
    update = token_update(str(session.pk))
    if not request.htmx:
        return redirect("chat:session", session_id=session.pk)
    target = next(m for m in changed if m.pk == message_id)
    bubble = render_to_string(
        PARTIALS + "message.html",
        {"m": message_view(message_to_json(target)), "session_id": str(session.pk)},
        request=request,
    )
    return HttpResponse(bubble + meter_fragments(session, update))
