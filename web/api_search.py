"""Search over the caller's own chats (issue 26 item 2): ``GET /api/search/?q=``."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from recall.chats import SearchRefused, search_chats
from web.api import ApiView
from web.serializers import ErrorSerializer


class TitleHitSerializer(serializers.Serializer):
    sessionId = serializers.CharField()
    title = serializers.CharField()
    updatedAt = serializers.DateTimeField()


class MessageHitSerializer(serializers.Serializer):
    sessionId = serializers.CharField()
    sessionTitle = serializers.CharField()
    messageId = serializers.IntegerField()
    role = serializers.CharField()
    snippet = serializers.CharField()
    createdAt = serializers.DateTimeField()


class ChatSearchSerializer(serializers.Serializer):
    """Documentation only (``ChatSearch.to_json`` builds the answer)."""

    query = serializers.CharField()
    matched = serializers.CharField()
    titles = TitleHitSerializer(many=True)
    messages = MessageHitSerializer(many=True)


class ChatSearchView(ApiView):
    """The caller's chats by title, and their messages by text, best first."""

    @extend_schema(
        parameters=[OpenApiParameter("q", str, required=True, description="words to find")],
        responses={200: ChatSearchSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        try:
            found = search_chats(user=request.user, query=request.query_params.get("q", ""))
        except SearchRefused as exc:
            body = {"error": str(exc), "reason": "bad_query"}
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        return Response(found.to_json())
