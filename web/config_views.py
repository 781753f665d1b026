"""Configuration pages: agents (create, edit, delete; with the seed's 「上下文压缩」 section,
§8.5) and the model channels (staff only, §8.6: the window in use, a connection test, the
default auxiliary model). Validation in forms, writes in ``agents.configuration`` and
``agents.auxiliary``, the connection test in ``agents.channel_check``."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.forms import BaseForm
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.access import SessionNotFound, agent_for_user, agents_for_user, session_for_user
from agents.auxiliary import auxiliary_choice, default_auxiliary_channel, default_auxiliary_set
from agents.channel_check import ChannelTest, channel_test, window_in_use
from agents.configuration import (
    AgentInUse,
    agent_create,
    agent_delete,
    agent_editable,
    agent_update,
    agent_use,
    channel_create,
    channel_update,
)
from agents.models import Agent, ModelChannel
from web.forms import AgentForm, AgentInitial, ChannelForm

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


def _editable_agent(request: HttpRequest, agent_id: int) -> Agent:
    agent = _visible_agent(request, agent_id)
    if not agent_editable(user=request.user, agent=agent):
        raise PermissionDenied(_("Only staff can change a shared agent."))
    return agent


def _apply_model_errors(form: BaseForm, error: ValidationError) -> None:
    for field, problems in error.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)


# --- agents ---------------------------------------------------------------------------


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


def _agent_form(request: HttpRequest, *, initial: AgentInitial | None = None) -> AgentForm:
    """Bound to the POST, if any; staff may share an agent with every user."""
    return AgentForm(
        request.POST if request.method == "POST" else None,
        can_share=bool(request.user.is_staff),
        default_auxiliary=default_auxiliary_channel(),
        initial=initial,
    )


def _agent_page(request: HttpRequest, form: AgentForm, agent: Agent | None) -> HttpResponse:
    """The agent page, new or existing; it says which model compaction will use (the saved
    choice, or for a new agent the system default it would inherit)."""
    choice = auxiliary_choice(agent=agent if agent is not None else Agent())
    return render(
        request,
        "agents/agent_edit.html",
        {"agent": agent, "form": form, "compaction_choice": choice},
    )


@require_http_methods(["GET", "POST"])
def agent_new(request: HttpRequest) -> HttpResponse:
    """Everyone may create agents of their own; staff may share one with every user."""
    form = _agent_form(request, initial=AgentForm.initial_for_new())
    if request.method == "POST" and form.is_valid():
        try:
            agent = agent_create(creator=request.user, **form.settings())
        except ValidationError as exc:
            _apply_model_errors(form, exc)
        else:
            messages.success(request, _("Agent created."))
            return redirect("config:agent_edit", agent_id=agent.pk)
    return _agent_page(request, form, None)


@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = _editable_agent(request, agent_id)
    if request.method == "POST":
        form = _agent_form(request)
        if form.is_valid():
            try:
                agent_update(agent=agent, editor=request.user, **form.settings())
            except ValidationError as exc:
                agent.refresh_from_db()
                _apply_model_errors(form, exc)
            else:
                messages.success(request, _("Agent saved."))
                return redirect("config:agent_edit", agent_id=agent.pk)
    else:
        form = _agent_form(request, initial=AgentForm.initial_for(agent))
    return _agent_page(request, form, agent)


@require_http_methods(["GET", "POST"])
def agent_remove(request: HttpRequest, agent_id: int) -> HttpResponse:
    """Confirm, then delete. A chat keeps its agent: the user's own chats may go with it
    (ticked on the page), anyone else's keep it — said on the page, never a server error."""
    agent = _editable_agent(request, agent_id)
    if request.method == "POST":
        try:
            deleted = agent_delete(
                agent=agent, user=request.user, with_chats=request.POST.get("with_chats") == "on"
            )
        except AgentInUse:
            messages.error(request, _("The agent was not deleted: it still has chats."))
        else:
            done = (
                ngettext(
                    "Agent “%(name)s” deleted, with its %(count)d chat.",
                    "Agent “%(name)s” deleted, with its %(count)d chats.",
                    deleted,
                )
                if deleted
                else _("Agent “%(name)s” deleted.")
            )
            messages.success(request, done % {"name": agent.name, "count": deleted})
            return redirect("config:agent_list")
    use = agent_use(agent=agent, user=request.user)
    status = 409 if request.method == "POST" else 200
    return render(request, "agents/agent_delete.html", {"agent": agent, "use": use}, status=status)


@require_GET
def agent_of_session(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Where a chat's "no auxiliary model" bubble leads: its agent's compaction settings, or,
    for an agent only staff may change, the agents page with who can fix it."""
    try:
        session = session_for_user(user=request.user, session_id=session_id)
    except SessionNotFound as exc:
        raise Http404(_("No such session.")) from exc
    agent = session.agent
    if agent_editable(user=request.user, agent=agent):
        return redirect(reverse("config:agent_edit", args=[agent.pk]) + "#compaction-settings")
    messages.warning(
        request,
        _(
            "Only staff can choose the auxiliary model of the shared agent “%(name)s”: ask an "
            "administrator to make a model channel the default auxiliary model."
        )
        % {"name": agent.name},
    )
    return redirect("config:agent_list")


# --- model channels -------------------------------------------------------------------


def _channel(channel_id: int) -> ModelChannel:
    channel = ModelChannel.objects.filter(pk=channel_id).first()
    if channel is None:
        raise Http404(_("No such model channel."))
    return channel


@require_GET
@staff_required
def channel_list(request: HttpRequest) -> HttpResponse:
    channels = ModelChannel.objects.all()
    return render(
        request,
        "channels/channel_list.html",
        {
            "rows": [(c, window_in_use(c)) for c in channels],
            "default_auxiliary": default_auxiliary_channel(),
        },
    )


def _after_save(request: HttpRequest, channel: ModelChannel, default_before: int | None) -> None:
    """Tell what a save changed beyond the fields: the default auxiliary model, and a
    window that is only the fallback for an unknown model."""
    default = default_auxiliary_channel()
    if default is not None and default.pk == channel.pk and default_before != channel.pk:
        messages.info(
            request,
            _(
                "“%(name)s” is now the default auxiliary model: compaction summarizes with it "
                "for every agent without an auxiliary model of its own."
            )
            % {"name": channel.name},
        )
    window = window_in_use(channel)
    if window.source == "default":
        messages.warning(
            request,
            _(
                "The model “%(model)s” is not in the table of known models, so its context "
                "window is taken as %(tokens)s tokens. Enter the window your server serves "
                "if it differs."
            )
            % {"model": channel.model, "tokens": f"{window.tokens:,}"},
        )


def _channel_page(
    request: HttpRequest,
    form: ChannelForm,
    channel: ModelChannel | None,
    *,
    result: ChannelTest | None = None,
) -> HttpResponse:
    default = default_auxiliary_channel()
    context = {
        "form": form,
        "channel": channel,
        "window": window_in_use(channel) if channel is not None else None,
        "is_default": channel is not None and default is not None and default.pk == channel.pk,
        "result": result,
    }
    return render(request, "channels/channel_form.html", context)


def _default_pk() -> int | None:
    default = default_auxiliary_channel()
    return default.pk if default is not None else None


@require_http_methods(["GET", "POST"])
@staff_required
def channel_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ChannelForm(request.POST)
        if form.is_valid():
            values = form.settings()
            values.pop("clear_api_key", None)
            default_before = _default_pk()
            try:
                channel = channel_create(**values)
            except ValidationError as exc:
                _apply_model_errors(form, exc)
            else:
                messages.success(request, _("Model channel created."))
                _after_save(request, channel, default_before)
                return redirect("config:channel_edit", channel_id=channel.pk)
    else:
        form = ChannelForm(initial={"enabled": True})
    return _channel_page(request, form, None)


@require_http_methods(["GET", "POST"])
@staff_required
def channel_edit(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = _channel(channel_id)
    if request.method == "POST":
        form = ChannelForm(request.POST, has_stored_key=channel.has_api_key)
        if form.is_valid():
            default_before = _default_pk()
            try:
                channel_update(channel=channel, **form.settings())
            except ValidationError as exc:
                channel.refresh_from_db()
                _apply_model_errors(form, exc)
            else:
                messages.success(request, _("Model channel saved."))
                _after_save(request, channel, default_before)
                return redirect("config:channel_edit", channel_id=channel.pk)
    else:
        form = ChannelForm(
            initial=ChannelForm.initial_for(channel), has_stored_key=channel.has_api_key
        )
    return _channel_page(request, form, channel)


@require_POST
@staff_required
def channel_test_view(request: HttpRequest, channel_id: int) -> HttpResponse:
    """Test the saved channel: its result as a fragment for htmx, else on the whole page."""
    channel = _channel(channel_id)
    result = channel_test(channel=channel)
    if getattr(request, "htmx", False):
        return render(request, "channels/channel_test_result.html", {"result": result})
    form = ChannelForm(initial=ChannelForm.initial_for(channel), has_stored_key=channel.has_api_key)
    return _channel_page(request, form, channel, result=result)


@require_POST
@staff_required
def channel_make_default(request: HttpRequest, channel_id: int) -> HttpResponse:
    """Make the channel the system default auxiliary model; back to where the button was."""
    channel = _channel(channel_id)
    try:
        default_auxiliary_set(channel=channel)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(
            request,
            _(
                "“%(name)s” is now the default auxiliary model: compaction summarizes with it "
                "for every agent without an auxiliary model of its own."
            )
            % {"name": channel.name},
        )
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("config:channel_edit", args=[channel.pk])
    return redirect(target)
