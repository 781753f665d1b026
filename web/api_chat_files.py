"""A chat as a file and back (issue 26 item 5): ``GET /api/sessions/<id>/export/`` and
``POST /api/sessions/import/`` — the product's own lossless JSON, OpenAI JSON, Markdown."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from agents.chat_files import EXPORT_FORMATS, ChatFileError, export_chat, import_chat
from web.api import SESSION_ID, ApiView, _own_session
from web.serializers import ErrorSerializer


def exported_response(session: Any, fmt: str, view: str) -> HttpResponse:
    """The file as a download (the chat page's Export links and the API share it)."""
    exported = export_chat(session=session, fmt=fmt, view=view)
    response = HttpResponse(exported.body, content_type=f"{exported.content_type}; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, exported.filename) or ""
    return response


class SessionExportView(ApiView):
    """The chat as a file (``?as=``): ``netaclaw`` (the default: every message with its marks, imports
    back to the same conversation), ``openai`` or ``markdown`` (of ``view``)."""

    @extend_schema(
        parameters=[
            SESSION_ID,
            OpenApiParameter("as", str, enum=list(EXPORT_FORMATS)),
            OpenApiParameter("view", str, enum=["full", "compacted"]),
        ],
        responses={(200, "application/json"): dict, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, session_id: str) -> Any:
        session = _own_session(request, session_id)
        fmt = request.query_params.get("as", "netaclaw")  # "format" is DRF's own
        view = request.query_params.get("view", "full")
        if fmt not in EXPORT_FORMATS or view not in {"full", "compacted"}:
            body = {
                "error": f"'as' is one of {', '.join(EXPORT_FORMATS)}; 'view' full or compacted",
                "reason": "bad_query",
            }
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        return exported_response(session, fmt, view)


class ImportedSerializer(serializers.Serializer):
    sessionId = serializers.CharField()
    title = serializers.CharField()
    messages = serializers.IntegerField()


class SessionImportView(ApiView):
    """A new chat from a file (multipart ``file``, or the JSON as the body): the product's
    own format or OpenAI messages; ``agent`` (an id) chooses the agent. A bad file is a 400
    naming the message and the field, and writes nothing."""

    parser_classes = (MultiPartParser,)  # JSON is read as the raw body, not parsed twice

    @extend_schema(request=None, responses={201: ImportedSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        params: dict[str, Any] = dict(request.query_params.items())
        if request.content_type.startswith("multipart"):
            params.update({k: v for k, v in request.data.items() if k in {"agent", "title"}})
            upload = request.FILES.get("file")
            raw = upload.read() if upload is not None else b""
        else:  # the file itself as the body (JSON)
            raw = request.body
        try:
            session = import_chat(
                user=request.user,
                raw=raw,
                agent_id=params.get("agent"),
                title=str(params.get("title") or ""),
            )
        except ChatFileError as exc:
            error = {"error": str(exc), "reason": "bad_file"}
            return Response(error, status=status.HTTP_400_BAD_REQUEST)
        body: dict[str, object] = {
            "sessionId": str(session.pk),
            "title": session.title,
            "messages": session.messages.count(),
        }
        return Response(body, status=status.HTTP_201_CREATED)
