"""Configuration pages: an agent's settings (with the seed's 「上下文压缩」 section, §8.5)
and the model channels (staff only, §8.6). Validation in forms, writes in
``agents.configuration``."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from agents.access import agent_for_user, agents_for_user
from agents.configuration import (
    agent_editable,
    agent_update,
    channel_create,
    channel_update,
    default_auxiliary_channel,
)
from agents.models import Agent, ModelChannel
from web.forms import AgentForm, ChannelForm

View = Callable[..., HttpResponse]


def staff_required(view: View) -> View:
    """Logged-in non-staff users get 403 (anonymous ones never get here: login is required)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied(_("Only staff can manage model channels."))
        return view(request, *args, **kwargs)

    return wrapper


def _visible_agent(request: HttpRequest, agent_id: int) -> Agent:
    try:
        return agent_for_user(user=request.user, agent_id=agent_id)
    except LookupError as exc:
        raise Http404(_("No such agent.")) from exc


def _apply_model_errors(form: Any, error: ValidationError) -> None:
    for field, problems in error.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)


@require_GET
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = agents_for_user(user=request.user).select_related(
        "model_channel", "auxiliary_model_channel", "owner"
    )
    rows = [(agent, agent_editable(user=request.user, agent=agent)) for agent in agents]
    return render(
        request,
        "agents/agent_list.html",
        {"rows": rows, "default_auxiliary": default_auxiliary_channel()},
    )


@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = _visible_agent(request, agent_id)
    if not agent_editable(user=request.user, agent=agent):
        raise PermissionDenied(_("Only staff can change a shared agent."))
    if request.method == "POST":
        form = AgentForm(request.POST)
        if form.is_valid():
            try:
                agent_update(agent=agent, **form.settings())
            except ValidationError as exc:
                agent.refresh_from_db()
                _apply_model_errors(form, exc)
            else:
                messages.success(request, _("Agent saved."))
                return redirect("config:agent_edit", agent_id=agent.pk)
    else:
        form = AgentForm(initial=AgentForm.initial_for(agent))
    return render(
        request,
        "agents/agent_edit.html",
        {"agent": agent, "form": form, "default_auxiliary": default_auxiliary_channel()},
    )


@require_GET
@staff_required
def channel_list(request: HttpRequest) -> HttpResponse:
    channels = ModelChannel.objects.all()
    return render(
        request,
        "channels/channel_list.html",
        {"channels": channels, "default_auxiliary": default_auxiliary_channel()},
    )


@require_http_methods(["GET", "POST"])
@staff_required
def channel_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ChannelForm(request.POST)
        if form.is_valid():
            values = form.settings()
            values.pop("clear_api_key", None)
            try:
                channel = channel_create(**values)
            except ValidationError as exc:
                _apply_model_errors(form, exc)
            else:
                messages.success(request, _("Model channel created."))
                return redirect("config:channel_edit", channel_id=channel.pk)
    else:
        form = ChannelForm(initial={"enabled": True})
    return render(request, "channels/channel_form.html", {"form": form, "channel": None})


@require_http_methods(["GET", "POST"])
@staff_required
def channel_edit(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = ModelChannel.objects.filter(pk=channel_id).first()
    if channel is None:
        raise Http404(_("No such model channel."))
    if request.method == "POST":
        form = ChannelForm(request.POST, has_stored_key=channel.has_api_key)
        if form.is_valid():
            try:
                channel_update(channel=channel, **form.settings())
            except ValidationError as exc:
                channel.refresh_from_db()
                _apply_model_errors(form, exc)
            else:
                messages.success(request, _("Model channel saved."))
                return redirect("config:channel_edit", channel_id=channel.pk)
    else:
        form = ChannelForm(
            initial=ChannelForm.initial_for(channel), has_stored_key=channel.has_api_key
        )
    return render(request, "channels/channel_form.html", {"form": form, "channel": channel})
