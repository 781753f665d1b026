"""``GET /api/sessions/<id>/context/`` (issue 17 item 11): the token bar's reading with what
fills the context — the figures of ``token_update`` (without its ``type``), read now."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.events import TokenUpdate
from agents.meter import context_reading
from web.api import SESSION_ID, ApiView, _own_session
from web.serializers import ErrorSerializer


class BreakdownSerializer(serializers.Serializer):
    """What fills the context, in tokens (documentation only, as every serializer here:
    ``TokenUpdate.to_json`` builds the answer)."""

    systemPrompt = serializers.IntegerField()
    toolDefinitions = serializers.IntegerField()
    pins = serializers.IntegerField()
    summary = serializers.IntegerField()
    messages = serializers.IntegerField()
    free = serializers.IntegerField()


class ContextFiguresSerializer(serializers.Serializer):
    usedTokens = serializers.IntegerField()
    maxTokens = serializers.IntegerField()
    percent = serializers.FloatField()
    thresholdPercent = serializers.IntegerField()
    estimated = serializers.BooleanField()
    thresholdTokens = serializers.IntegerField()
    tokenCap = serializers.IntegerField(allow_null=True)
    breakdown = BreakdownSerializer()


class CurrentUsageSerializer(serializers.Serializer):
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    totalTokens = serializers.IntegerField()
    apiCalls = serializers.IntegerField()


class AutoCompactionSerializer(serializers.Serializer):
    paused = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)


class SessionContextSerializer(serializers.Serializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        """Declared here: a ``context`` attribute would hide the serializer's own."""
        return {
            "sessionId": serializers.UUIDField(),
            "current": CurrentUsageSerializer(),
            "context": ContextFiguresSerializer(),
            "compactionCount": serializers.IntegerField(),
            "autoCompaction": AutoCompactionSerializer(),
        }


class SessionContextView(ApiView):
    """The session's context now, as ``token_update`` carries it, with ``breakdown``:
    system prompt, tool definitions, pins, summary, messages (adding up to ``usedTokens``)
    and free, in tokens."""

    @extend_schema(
        parameters=[SESSION_ID],
        responses={200: SessionContextSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, session_id: str) -> Response:
        session = _own_session(request, session_id)
        reading = TokenUpdate.of(str(session.pk), context_reading(session=session)).to_json()
        del reading["type"]
        return Response(reading)
