"""Pages of the chat domain. Thin: read through selectors, write through services."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.access import agents_for_user, sessions_for_user


@require_GET
def session_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "chat/session_list.html",
        {
            "sessions": sessions_for_user(user=request.user).select_related("agent")[:200],
            "agents": agents_for_user(user=request.user).select_related("model_channel"),
        },
    )
