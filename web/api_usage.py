"""Usage (issue 25 item 8; CONTRACT §8): what a chat — or all of the caller's chats — used:
the chat's model calls, the compactions' auxiliary requests, their total, and a cost where
the channels used have prices (``agents.usage``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.usage import session_usage, user_usage
from web.api import SESSION_ID, ApiView, _own_session
from web.serializers import ErrorSerializer


class ChatUsageSerializer(serializers.Serializer):
    """Documentation only, as every serializer here (``Usage.to_json`` builds the answer)."""

    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    apiCalls = serializers.IntegerField()


class CompactionUsageSerializer(serializers.Serializer):
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    requests = serializers.IntegerField()


class TotalUsageSerializer(serializers.Serializer):
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    cost = serializers.CharField(
        required=False, help_text="Only where the channels used have prices (a decimal string)."
    )


class UsageSerializer(serializers.Serializer):
    chat = ChatUsageSerializer()
    compaction = CompactionUsageSerializer()
    total = TotalUsageSerializer()


class SessionUsageView(ApiView):
    """One chat's usage: its turns' model calls and its compactions' auxiliary requests."""

    @extend_schema(parameters=[SESSION_ID], responses={200: UsageSerializer, 404: ErrorSerializer})
    def get(self, request: Request, session_id: str) -> Response:
        return Response(session_usage(session=_own_session(request, session_id)).to_json())


class UserUsageView(ApiView):
    """The same totals over every chat of the caller."""

    @extend_schema(responses={200: UsageSerializer})
    def get(self, request: Request) -> Response:
        return Response(user_usage(owner=request.user).to_json())
