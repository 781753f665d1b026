"""``POST /api/sessions/<id>/attachments/`` (issue 26 item 4): files for the chat's next
message, stored in its workspace; the page's paperclip, drop and paste post here too. A
message then names them by the paths this answers (the socket's ``chat`` frame,
``attachments``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from agents.attachments import MAX_PER_MESSAGE, AttachmentRefused, attachments_store, max_bytes
from web.api import SESSION_ID, ApiView, _own_session
from web.api_errors import refusal_response
from web.serializers import ErrorSerializer


class AttachmentSerializer(serializers.Serializer):
    name = serializers.CharField()
    path = serializers.CharField()
    size = serializers.IntegerField()
    type = serializers.CharField()


class AttachmentsSerializer(serializers.Serializer):
    attachments = AttachmentSerializer(many=True)


class SessionAttachmentsView(ApiView):
    """Multipart ``file`` (one or several): each stored under ``attachments/`` of the
    chat's workspace (a name taken gets ``-2``, ``-3`` …), all or none: 201
    ``{"attachments": [{"name", "path", "size", "type"}]}``; 413 ``attachment_too_large``
    or ``workspace_full`` (the quota), 400 ``no_file`` / ``too_many_attachments``."""

    parser_classes = (MultiPartParser,)

    @extend_schema(
        parameters=[SESSION_ID],
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
            }
        },
        responses={
            201: AttachmentsSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            413: ErrorSerializer,
        },
    )
    def post(self, request: Request, session_id: str) -> Response:
        session = _own_session(request, session_id)
        files = request.FILES.getlist("file")
        if not files:
            return refusal_response("no_file")
        if len(files) > MAX_PER_MESSAGE:
            return refusal_response(
                "too_many_attachments", f"at most {MAX_PER_MESSAGE} per message"
            )
        too_large = [f.name for f in files if f.size is not None and f.size > max_bytes()]
        if too_large:
            detail = f"{too_large[0]}: the limit is {max_bytes():,} bytes"
            return refusal_response("attachment_too_large", detail)
        try:
            stored = attachments_store(
                session=session, files=[(f.name or "file", f.read()) for f in files]
            )
        except AttachmentRefused as refused:
            return refusal_response(refused.reason, refused.detail)
        body = {"attachments": [a.to_json() for a in stored]}
        return Response(body, status=status.HTTP_201_CREATED)
