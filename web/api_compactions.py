"""The REST API of compaction control (issue 17; CONTRACT §7): records, undo, pins and
summary edits. Thin views over ``compaction.records``, ``compaction.undo`` and
``compaction.controls``, behind the same access gate as every session endpoint; a refusal
answers ``{"error", "reason"}`` with the status of its reason (``agents.reasons``)."""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.history_pages import MessageNotFound, message_for_session
from agents.message_format import message_to_json
from agents.models import ChatSession, CompactionRecord
from compaction import records
from compaction.controls import SUMMARY_MAX_CHARS, EditRefused, message_pin, summary_edit
from compaction.preview import (
    PreviewNotFound,
    PreviewRefused,
    preview_accept,
    preview_discard,
)
from compaction.undo import RecordNotFound, UndoRefused, compaction_undo
from web.api import (
    SESSION_ID,
    ApiView,
    SessionMessageDetailView,
    _outcome_response,
    _own_session,
)
from web.api_errors import refusal_response
from web.serializers import (
    CompactionRecordDetailSerializer,
    CompactionRecordSerializer,
    CompactResultSerializer,
    ErrorSerializer,
    MessagePatchSerializer,
    MessageSerializer,
    UndoResultSerializer,
    refuse_nul,
)

RECORD_ID = OpenApiParameter("record_id", OpenApiTypes.INT, OpenApiParameter.PATH)
MESSAGE_ID = OpenApiParameter("message_id", OpenApiTypes.INT, OpenApiParameter.PATH)
PREVIEW_ID = OpenApiParameter("preview_id", OpenApiTypes.INT, OpenApiParameter.PATH)


def _record(session: ChatSession, record_id: int) -> CompactionRecord:
    record = CompactionRecord.objects.filter(session=session, pk=record_id).first()
    if record is None:
        raise exceptions.NotFound(_("No such compaction."))
    return record


class SessionCompactionsView(ApiView):
    """``GET /api/sessions/<id>/compactions/``: the session's compaction records, newest
    first (every trigger and ending: done, failed, cancelled, skipped, undone)."""

    @extend_schema(parameters=[SESSION_ID], responses=CompactionRecordSerializer(many=True))
    def get(self, request: Request, session_id: str) -> Response:
        session = _own_session(request, session_id)
        rows = records.records_for_session(session=session)
        return Response([records.record_json(r) for r in rows])


class SessionCompactionDetailView(ApiView):
    """One record with what it was asked for (``instructions``, ``upTo``), its summary's
    edits and what it dropped (``dropped``: values of the summarized originals found in
    neither the summary nor the kept context, each with its message id)."""

    @extend_schema(
        parameters=[SESSION_ID, RECORD_ID],
        responses={200: CompactionRecordDetailSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, session_id: str, record_id: int) -> Response:
        session = _own_session(request, session_id)
        return Response(records.record_json(_record(session, record_id), detail=True))


class SessionCompactionUndoView(ApiView):
    """``POST /api/sessions/<id>/compactions/<record id>/undo/`` → ``{"restoredCount"}``."""

    @extend_schema(
        parameters=[SESSION_ID, RECORD_ID],
        request=None,
        responses={200: UndoResultSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
        description="The originals of the compaction become active again, its summary is "
        "marked undone (kept), later messages stay after them. 409 not_latest unless it is "
        "the latest compaction still in effect; 409 in_progress while one runs.",
    )
    def post(self, request: Request, session_id: str, record_id: int) -> Response:
        session = _own_session(request, session_id)
        try:
            outcome = compaction_undo(session=session, record_id=record_id)
        except RecordNotFound as exc:
            raise exceptions.NotFound(_("No such compaction.")) from exc
        except UndoRefused as exc:
            return refusal_response(exc.reason)
        return Response({"restoredCount": outcome.restored_count})


class SessionMessageView(SessionMessageDetailView):
    """``GET`` one whole message; ``PATCH`` ``{"pinned"}`` (any message) and/or
    ``{"content"}`` (a summary still in effect; kept in its record's ``edits``)."""

    @extend_schema(
        parameters=[SESSION_ID, MESSAGE_ID],
        request=MessagePatchSerializer,
        responses={
            200: MessageSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
        operation_id="sessions_message_partial_update",
    )
    def patch(self, request: Request, session_id: str, message_id: int) -> Response:
        session = _own_session(request, session_id)
        body = MessagePatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            if "content" in data:
                summary_edit(
                    session=session,
                    message_id=message_id,
                    content=data["content"],
                    editor=request.user,
                )
            if "pinned" in data:
                message_pin(session=session, message_id=message_id, pinned=data["pinned"])
            message = message_for_session(session=session, message_id=message_id)
        except MessageNotFound as exc:
            raise exceptions.NotFound(_("No such message.")) from exc
        except EditRefused as exc:
            return refusal_response(exc.reason)
        return Response(message_to_json(message))


# --- preview before applying (issue 17 item 6; README "Preview before applying") ----------


class PreviewAcceptSerializer(serializers.Serializer):
    """``{"summary"?}``: the summary's text to apply instead of the previewed one."""

    summary = serializers.CharField(
        required=False,
        allow_blank=False,
        max_length=SUMMARY_MAX_CHARS,
        trim_whitespace=False,
        validators=[refuse_nul],
        help_text="The summary as it should apply (an edit, kept in the record's edits); "
        "absent: the previewed summary.",
    )

    def validate_summary(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError(_("The summary is empty."))
        return value


def _preview_gone() -> exceptions.NotFound:
    """Applied, discarded, replaced by a newer one, expired — or never this chat's."""
    return exceptions.NotFound(_("No such preview."))


class SessionCompactionPreviewView(ApiView):
    """``DELETE /api/sessions/<id>/compact/previews/<preview id>/``: drop a preview (its
    record says ``cancelled``, reason ``preview_discarded``)."""

    @extend_schema(
        parameters=[SESSION_ID, PREVIEW_ID],
        request=None,
        responses={204: None, 404: ErrorSerializer},
    )
    def delete(self, request: Request, session_id: str, preview_id: int) -> Response:
        session = _own_session(request, session_id)
        try:
            preview_discard(session=session, preview_id=preview_id)
        except PreviewNotFound as exc:
            raise _preview_gone() from exc
        return Response(status=204)


class SessionCompactionPreviewAcceptView(ApiView):
    """``POST /api/sessions/<id>/compact/previews/<preview id>/accept/`` ``{"summary"?}``:
    apply the preview — its summary, or ``summary`` as edited — and answer as the compact
    endpoint does."""

    @extend_schema(
        parameters=[SESSION_ID, PREVIEW_ID],
        request=PreviewAcceptSerializer,
        responses={
            200: CompactResultSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
            500: ErrorSerializer,
        },
        description="Applies exactly the previewed summary to exactly the span it was made "
        "from, with no model call. 409 history_changed (nothing applied) when that history "
        "changed since (a message edited, pinned, removed or compacted); 409 in_progress "
        "while a compaction runs; 404 for a preview that was applied, discarded, replaced "
        "by a newer one or expired (after an hour).",
    )
    def post(self, request: Request, session_id: str, preview_id: int) -> Response:
        session = _own_session(request, session_id)
        body = PreviewAcceptSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            outcome = preview_accept(
                session=session,
                preview_id=preview_id,
                editor=request.user,
                summary=body.validated_data.get("summary"),
            )
        except PreviewNotFound as exc:
            raise _preview_gone() from exc
        except PreviewRefused as exc:
            return refusal_response(exc.reason)
        return _outcome_response(outcome)
