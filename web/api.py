"""The REST API (CONTRACT §4): thin DRF views over the access gate, services and selectors.

Every view validates with a serializer, calls one service (or selector) and serializes
the result. DRF policy (authentication, permissions, renderers) comes from the single
``REST_FRAMEWORK`` settings dict; views only narrow it (staff-only endpoints).

``LoginRequiredMiddleware`` is on for the whole site, so every view here is marked
``login_not_required``: DRF's session and token authentication answer unauthenticated
requests with JSON 401/403 instead of a redirect to the login page.

Compaction waits for the auxiliary model for up to a minute or two, so
``session_compact`` is an ``async`` Django view: DRF's policy (authentication with
CSRF for cookie clients, the ownership check, body validation) runs briefly in a
thread, the compaction runs in a worker thread of its own, and the event loop stays
free for every other request and socket of the process meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions, serializers, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import JSONParser
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView, exception_handler

from agents import configuration
from agents.access import (
    SessionNotFound,
    agent_for_user,
    agents_for_user,
    session_for_user,
    sessions_for_user,
)
from agents.broadcast import apublish
from agents.message_format import message_to_json
from agents.models import Agent, ChatSession, ModelChannel
from agents.selectors import HISTORY_VIEWS, history_load
from agents.services import session_create
from chat.turn import read_token_update
from compaction import service as compaction
from system import dictionary
from system.models import DictInfo
from web.serializers import (
    AgentSerializer,
    CompactRequestSerializer,
    CompactResultSerializer,
    DictInfoSerializer,
    ErrorSerializer,
    MessageSerializer,
    ModelChannelSerializer,
    SessionCreateSerializer,
    SessionSerializer,
)

SESSION_ID = OpenApiParameter(
    "session_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="Chat session id"
)


@method_decorator(login_not_required, name="dispatch")
class ApiView(APIView):
    """Base of every API view: DRF, not the login redirect, answers anonymous requests."""


def _own_session(request: Request, session_id: str) -> ChatSession:
    """The requester's session, or 404 — also for someone else's (ids cannot be probed)."""
    try:
        return session_for_user(user=request.user, session_id=session_id)
    except SessionNotFound as exc:
        raise exceptions.NotFound(_("No such session.")) from exc


def _visible_agent(request: Request, agent_id: int) -> Agent:
    try:
        return agent_for_user(user=request.user, agent_id=agent_id)
    except LookupError as exc:
        raise exceptions.NotFound(_("No such agent.")) from exc


# --- auth -----------------------------------------------------------------------------


@method_decorator(login_not_required, name="dispatch")
class TokenLoginView(ObtainAuthToken):
    """``POST /api/auth/token/`` ``{"username", "password"}`` → ``{"token"}``.

    Takes credentials only (no session or token authentication), so it needs no CSRF
    token; bad credentials answer 400 with DRF's ``non_field_errors`` message.
    """

    authentication_classes = ()

    @extend_schema(
        auth=[],
        responses={
            200: inline_serializer("AuthTokenResponse", {"token": serializers.CharField()}),
            400: OpenApiTypes.OBJECT,
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().post(request, *args, **kwargs)


# --- sessions -------------------------------------------------------------------------


class SessionListView(ApiView):
    @extend_schema(responses=SessionSerializer(many=True))
    def get(self, request: Request) -> Response:
        sessions = sessions_for_user(user=request.user).order_by("-updated_at")
        return Response(SessionSerializer(sessions, many=True).data)

    @extend_schema(request=SessionCreateSerializer, responses={201: SessionSerializer})
    def post(self, request: Request) -> Response:
        body = SessionCreateSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        session = session_create(
            owner=request.user,
            agent=body.validated_data["agent"],
            title=body.validated_data["title"],
        )
        return Response(SessionSerializer(session).data, status=status.HTTP_201_CREATED)


class SessionDetailView(ApiView):
    @extend_schema(parameters=[SESSION_ID], responses=SessionSerializer)
    def get(self, request: Request, session_id: str) -> Response:
        return Response(SessionSerializer(_own_session(request, session_id)).data)


class SessionMessagesView(ApiView):
    @extend_schema(
        parameters=[
            SESSION_ID,
            OpenApiParameter(
                "view",
                OpenApiTypes.STR,
                enum=list(HISTORY_VIEWS),
                default="compacted",
                description="compacted: what the model sees (summaries, not what they "
                "replaced); full: everything, each summary before the span it replaced.",
            ),
        ],
        responses={200: MessageSerializer(many=True), 400: ErrorSerializer},
    )
    def get(self, request: Request, session_id: str) -> Response:
        session = _own_session(request, session_id)
        view = request.query_params.get("view", "compacted")
        if view not in HISTORY_VIEWS:
            return Response(
                {
                    "error": _("Unknown view %(view)r; use 'compacted' or 'full'.")
                    % {"view": view},
                    "reason": "bad_view",
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        messages = history_load(session=session, view=view)
        return Response([message_to_json(m, view=view) for m in messages])


# --- compaction -----------------------------------------------------------------------

# CompactionOutcome.reason → HTTP status. 409: try again later (another compaction of
# the session is running, or the history moved under it); 422: the session or its
# configuration must change first; 502: the auxiliary model failed.
COMPACTION_FAILURE_STATUS: dict[str, int] = {
    "in_progress": status.HTTP_409_CONFLICT,
    "span_changed": status.HTTP_409_CONFLICT,
    "no_auxiliary_model": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "nothing_to_compact": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "oversized_message": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "system_prompt_too_long": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "summary_too_short": status.HTTP_502_BAD_GATEWAY,
    "timeout": status.HTTP_502_BAD_GATEWAY,
    "upstream_error": status.HTTP_502_BAD_GATEWAY,
    "rate_limited": status.HTTP_502_BAD_GATEWAY,
    "invalid_response": status.HTTP_502_BAD_GATEWAY,
    "connection_error": status.HTTP_502_BAD_GATEWAY,
    "auth_error": status.HTTP_502_BAD_GATEWAY,
    "bad_request": status.HTTP_502_BAD_GATEWAY,
}


@dataclass(frozen=True, slots=True)
class CompactRequest:
    session_id: str
    instructions: str | None


def _error_reason_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with the body reshaped to the compact endpoint's ``{"error", "reason"}``."""
    response = exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    if isinstance(exc, exceptions.ValidationError):
        fields = response.data if isinstance(response.data, dict) else {"body": response.data}
        first = next(iter(fields.items()), ("body", [_("Invalid request body.")]))
        detail = first[1][0] if isinstance(first[1], list) and first[1] else first[1]
        label = "body" if first[0] == api_settings.NON_FIELD_ERRORS_KEY else first[0]
        response.data = {"error": f"{label}: {detail}", "reason": "invalid", "fields": fields}
    elif isinstance(exc, exceptions.ParseError):
        response.data = {"error": str(exc.detail), "reason": "bad_json"}
    else:
        response.data = {"error": str(exc.detail), "reason": exc.default_code}
    return response


class SessionCompactGate(ApiView):
    """DRF's policy for the async ``session_compact`` view; not routed by itself.

    ``check`` runs DRF's authentication (session cookie with CSRF, or token),
    permissions and throttles, the ownership gate and the body serializer, exactly
    as ``APIView.dispatch`` would, and renders any refusal with DRF's exception
    handling. ``session_compact.cls`` points here, so drf-spectacular documents the
    endpoint from ``post`` below.
    """

    parser_classes = [JSONParser]

    def get_exception_handler(self) -> Any:
        return _error_reason_handler

    def check(self, request: HttpRequest, session_id: str) -> CompactRequest | HttpResponse:
        self.args, self.kwargs = (), {"session_id": session_id}
        drf_request = self.initialize_request(request, session_id=session_id)
        self.request = drf_request
        self.headers = self.default_response_headers
        try:
            self.initial(drf_request, session_id=session_id)
            if drf_request.method != "POST":
                raise exceptions.MethodNotAllowed(drf_request.method)
            return self.post(drf_request, session_id)
        except Exception as exc:
            return self.respond(self.handle_exception(exc))

    @extend_schema(
        parameters=[SESSION_ID],
        request=CompactRequestSerializer,
        responses={
            200: CompactResultSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
            422: ErrorSerializer,
            502: ErrorSerializer,
        },
        description=(
            "Compact the session now (reason manual) and wait for the result. "
            "409 in_progress: another compaction of this session is running. "
            "422 no_auxiliary_model / nothing_to_compact / oversized_message / "
            "system_prompt_too_long: change the session or configuration first. "
            "502 timeout / upstream_error / rate_limited / invalid_response / "
            "connection_error / summary_too_short: the auxiliary model failed; "
            "the history is unchanged."
        ),
    )
    def post(self, request: Request, session_id: str) -> CompactRequest:  # type: ignore[override]
        """Validation only: the compaction itself runs in ``session_compact``."""
        session = _own_session(request, session_id)
        body = CompactRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return CompactRequest(str(session.pk), body.validated_data["instructions"])

    def respond(self, response: Response) -> Response:
        response = self.finalize_response(self.request, response)
        response.render()
        return response


def _outcome_response(outcome: Any) -> Response:
    if outcome.status == "done":
        return Response(
            {
                "removed_count": outcome.removed_count,
                "summary_message_id": outcome.summary_message_id,
                "tokens_before": outcome.tokens_before,
                "tokens_after": outcome.tokens_after,
            }
        )
    if outcome.status == "skipped":
        reason = "in_progress"
        message = _("A compaction of this session is already running; try again shortly.")
    else:
        reason = outcome.reason or ("nothing_to_compact" if outcome.status == "nothing" else "")
        message = outcome.error or _("The compaction failed.")
    default = (
        status.HTTP_422_UNPROCESSABLE_ENTITY
        if outcome.status == "nothing"
        else status.HTTP_500_INTERNAL_SERVER_ERROR
    )
    code = COMPACTION_FAILURE_STATUS.get(reason, default)
    return Response({"error": message, "reason": reason or "internal_error"}, status=code)


@login_not_required
@csrf_exempt
async def session_compact(request: HttpRequest, session_id: str) -> HttpResponse:
    """``POST /api/sessions/<id>/compact/`` ``{"instructions"?}`` (CONTRACT §4)."""
    gate = SessionCompactGate()
    checked = await sync_to_async(gate.check)(request, session_id)
    if isinstance(checked, HttpResponse):
        return checked
    outcome = await compaction.acompact(
        checked.session_id, reason="manual", instructions=checked.instructions
    )
    await apublish(checked.session_id, await read_token_update(checked.session_id))
    return gate.respond(_outcome_response(outcome))


# What APIView.as_view() leaves on its result; drf-spectacular lists the endpoint by it.
session_compact.cls = SessionCompactGate  # type: ignore[attr-defined]
session_compact.initkwargs = {}  # type: ignore[attr-defined]


# --- agents ---------------------------------------------------------------------------


def _editable_agent(request: Request, agent_id: int) -> Agent:
    """Staff edit every agent; others only their own (shared ones are read-only to them)."""
    agent = _visible_agent(request, agent_id)
    if not configuration.agent_editable(user=request.user, agent=agent):
        raise exceptions.PermissionDenied(_("Only staff can change a shared agent."))
    return agent


class AgentListView(ApiView):
    @extend_schema(responses=AgentSerializer(many=True))
    def get(self, request: Request) -> Response:
        agents = agents_for_user(user=request.user)
        return Response(AgentSerializer(agents, many=True).data)

    @extend_schema(request=AgentSerializer, responses={201: AgentSerializer})
    def post(self, request: Request) -> Response:
        body = AgentSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        agent = configuration.agent_create(creator=request.user, **body.validated_data)
        return Response(AgentSerializer(agent).data, status=status.HTTP_201_CREATED)


class AgentDetailView(ApiView):
    @extend_schema(responses=AgentSerializer)
    def get(self, request: Request, agent_id: int) -> Response:
        return Response(AgentSerializer(_visible_agent(request, agent_id)).data)

    @extend_schema(request=AgentSerializer, responses=AgentSerializer)
    def patch(self, request: Request, agent_id: int) -> Response:
        agent = _editable_agent(request, agent_id)
        body = AgentSerializer(agent, data=request.data, partial=True, context={"request": request})
        body.is_valid(raise_exception=True)
        agent = configuration.agent_update(agent=agent, editor=request.user, **body.validated_data)
        return Response(AgentSerializer(agent).data)


# --- model channels (staff) -----------------------------------------------------------


class StaffApiView(ApiView):
    permission_classes = [IsAuthenticated, IsAdminUser]


def _channel(channel_id: int) -> ModelChannel:
    channel = ModelChannel.objects.filter(pk=channel_id).first()
    if channel is None:
        raise exceptions.NotFound(_("No such model channel."))
    return channel


class ModelChannelListView(StaffApiView):
    @extend_schema(responses=ModelChannelSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(ModelChannelSerializer(ModelChannel.objects.all(), many=True).data)

    @extend_schema(request=ModelChannelSerializer, responses={201: ModelChannelSerializer})
    def post(self, request: Request) -> Response:
        body = ModelChannelSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        channel = configuration.channel_create(**body.validated_data)
        return Response(ModelChannelSerializer(channel).data, status=status.HTTP_201_CREATED)


class ModelChannelDetailView(StaffApiView):
    @extend_schema(responses=ModelChannelSerializer)
    def get(self, request: Request, channel_id: int) -> Response:
        return Response(ModelChannelSerializer(_channel(channel_id)).data)

    @extend_schema(request=ModelChannelSerializer, responses=ModelChannelSerializer)
    def patch(self, request: Request, channel_id: int) -> Response:
        channel = _channel(channel_id)
        body = ModelChannelSerializer(channel, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        channel = configuration.channel_update(channel=channel, **body.validated_data)
        return Response(ModelChannelSerializer(channel).data)


# --- system dictionary (staff) --------------------------------------------------------


def _dict_entry(entry_id: int) -> DictInfo:
    entry = DictInfo.objects.select_related("type").filter(pk=entry_id).first()
    if entry is None:
        raise exceptions.NotFound(_("No such dictionary entry."))
    return entry


def _dict_values(validated: dict[str, Any]) -> dict[str, Any]:
    values = {k: validated[k] for k in ("name", "value", "remark") if k in validated}
    if "type" in validated:
        values["type_key"] = validated["type"]["key"]
    return values


class DictInfoListView(StaffApiView):
    @extend_schema(responses=DictInfoSerializer(many=True))
    def get(self, request: Request) -> Response:
        entries = DictInfo.objects.select_related("type")
        return Response(DictInfoSerializer(entries, many=True).data)

    @extend_schema(request=DictInfoSerializer, responses={201: DictInfoSerializer})
    def post(self, request: Request) -> Response:
        body = DictInfoSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        entry = dictionary.dict_entry_create(**_dict_values(body.validated_data))
        return Response(DictInfoSerializer(entry).data, status=status.HTTP_201_CREATED)


class DictInfoDetailView(StaffApiView):
    @extend_schema(responses=DictInfoSerializer)
    def get(self, request: Request, entry_id: int) -> Response:
        return Response(DictInfoSerializer(_dict_entry(entry_id)).data)

    @extend_schema(request=DictInfoSerializer, responses=DictInfoSerializer)
    def patch(self, request: Request, entry_id: int) -> Response:
        entry = _dict_entry(entry_id)
        body = DictInfoSerializer(entry, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        entry = dictionary.dict_entry_update(entry=entry, **_dict_values(body.validated_data))
        return Response(DictInfoSerializer(entry).data)


# --- schema ---------------------------------------------------------------------------


@method_decorator(login_not_required, name="dispatch")
class SchemaView(SpectacularAPIView):
    """The OpenAPI document, behind the same authentication as every other endpoint."""

    authentication_classes = api_settings.DEFAULT_AUTHENTICATION_CLASSES
    permission_classes = api_settings.DEFAULT_PERMISSION_CLASSES
