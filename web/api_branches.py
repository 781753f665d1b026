"""Regenerate, edit and the version switch over REST (issue 26 item 1): the same change the
socket frames make (``chat.branching``), answered with the fork it made or switched. The
answer a regenerate or an edit starts runs as a job, as a chat turn does: its events go to
the session's sockets and its messages to the history (``GET …/messages/``)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents import branches
from agents.leases import TURN, lease_seconds, new_holder
from agents.models import MessageFork
from agents.validation import MESSAGE_MAX_CHARS
from chat.branching import AcceptedBranch, BranchAction, accept_branch_sync
from runs import runner
from web.api import SESSION_ID, ApiView, _own_session
from web.api_errors import refusal_response
from web.serializers import ErrorSerializer, refuse_nul

MESSAGE_ID = OpenApiParameter("message_id", OpenApiTypes.INT, OpenApiParameter.PATH)
FORK_ID = OpenApiParameter("fork_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class BranchSerializer(serializers.Serializer):
    forkId = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["regenerate", "edit"])
    version = serializers.IntegerField()
    versions = serializers.IntegerField()
    setAsideFrom = serializers.IntegerField(allow_null=True)
    setAsideThrough = serializers.IntegerField(allow_null=True)
    messageId = serializers.IntegerField(allow_null=True)
    turn = serializers.BooleanField()


class ForkSerializer(serializers.Serializer):
    forkId = serializers.IntegerField()
    kind = serializers.CharField()
    version = serializers.IntegerField()
    versions = serializers.IntegerField()
    messageId = serializers.IntegerField(allow_null=True)
    active = serializers.BooleanField()


class EditSerializer(serializers.Serializer):
    content = serializers.CharField(max_length=MESSAGE_MAX_CHARS, trim_whitespace=False)

    def validate_content(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError(_("The message is empty"))
        refuse_nul(value)
        return value


class VersionSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)


def _run(request: Request, session_id: str, action: BranchAction) -> Response:
    accepted = accept_branch_sync(
        request.user,
        session_id,
        action,
        new_holder(TURN),
        lease_seconds(),
        runner.turn_deferrer(),
    )
    if accepted is None:
        raise exceptions.NotFound(_("No such session."))
    if accepted.refusal is not None:
        return refusal_response(accepted.refusal.reason or "internal_error")
    runner.submit_branch_sync(accepted)
    code = status.HTTP_202_ACCEPTED if accepted.holder else status.HTTP_200_OK
    return Response(_body(accepted), status=code)


def _body(accepted: AcceptedBranch) -> dict[str, Any]:
    changed = accepted.events[0].to_json()
    marked = changed.get("marked") or {}
    return {
        "forkId": changed["forkId"],
        "kind": changed["kind"],
        "version": changed["version"],
        "versions": changed["versions"],
        "setAsideFrom": changed["setAsideFrom"],
        "setAsideThrough": changed["setAsideThrough"],
        "messageId": marked.get("id"),
        "turn": changed["turn"],
    }


_DESCRIPTION = (
    "202 with the fork: the earlier version is kept (``GET …/forks/``), the answer runs as "
    "a job (its events on the session's socket, its messages in ``GET …/messages/``). 409 "
    "turn_in_progress while the agent works; 409 inside_compacted where a summary replaced "
    "that part of the chat (undo the compaction first)."
)


class MessageRegenerateView(ApiView):
    """``POST /api/sessions/<id>/messages/<message id>/regenerate/``: answer again the user's
    message that answer ``message id`` answers."""

    @extend_schema(
        parameters=[SESSION_ID, MESSAGE_ID],
        request=None,
        responses={202: BranchSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
        description=_DESCRIPTION,
    )
    def post(self, request: Request, session_id: str, message_id: int) -> Response:
        return _run(request, session_id, BranchAction("regenerate", message_id=message_id))


class MessageEditView(ApiView):
    """``POST /api/sessions/<id>/messages/<message id>/edit/`` ``{"content"}``: send the
    user's message again with this text."""

    @extend_schema(
        parameters=[SESSION_ID, MESSAGE_ID],
        request=EditSerializer,
        responses={
            202: BranchSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
        description=_DESCRIPTION,
    )
    def post(self, request: Request, session_id: str, message_id: int) -> Response:
        body = EditSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        action = BranchAction("edit", message_id=message_id, content=body.validated_data["content"])
        return _run(request, session_id, action)


class SessionForksView(ApiView):
    """``GET /api/sessions/<id>/forks/``: every fork of the chat, with its versions and
    whether its switch is on the active branch (``active``)."""

    @extend_schema(parameters=[SESSION_ID], responses=ForkSerializer(many=True))
    def get(self, request: Request, session_id: str) -> Response:
        session = _own_session(request, session_id)
        marks = branches.branch_marks(session=session)
        on_branch = {m.fork_id: message_id for message_id, found in marks.items() for m in found}
        forks = MessageFork.objects.filter(session=session).order_by("id")
        return Response(
            [
                {
                    "forkId": fork.pk,
                    "kind": fork.kind,
                    "version": fork.selected,
                    "versions": fork.versions,
                    "messageId": on_branch.get(fork.pk),
                    "active": fork.pk in on_branch,
                }
                for fork in forks
            ]
        )


class ForkSelectView(ApiView):
    """``POST /api/sessions/<id>/forks/<fork id>/select/`` ``{"version"}``: make that
    version the conversation again."""

    @extend_schema(
        parameters=[SESSION_ID, FORK_ID],
        request=VersionSerializer,
        responses={
            200: BranchSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
        description="The chosen version's messages are the history again; the current one "
        "is set aside. 409 turn_in_progress while the agent works; 409 inside_compacted when "
        "a summary replaced part of the current version.",
    )
    def post(self, request: Request, session_id: str, fork_id: int) -> Response:
        body = VersionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        action = BranchAction("select", fork_id=fork_id, version=body.validated_data["version"])
        return _run(request, session_id, action)
