"""The REST API (CONTRACT §4): thin DRF views over the access gate, services and selectors.

Every view validates with a serializer, calls one service (or selector) and serializes
the result. DRF policy (authentication, permissions, renderers) comes from the single
``REST_FRAMEWORK`` settings dict; views only narrow it (staff-only endpoints).

``LoginRequiredMiddleware`` is on for the whole site, so every view here is marked
``login_not_required``: DRF's session and token authentication answer unauthenticated
requests with JSON 401/403 instead of a redirect to the login page.

Compaction waits for the auxiliary model for up to a minute or two; ``SessionCompactView``
is still a plain DRF view (see there why the event loop stays free meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import urlencode

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions, serializers, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from agents import accounts, configuration, reasons
from agents.access import (
    SessionNotFound,
    agent_for_user,
    agents_for_user,
    session_for_user,
    sessions_for_user,
)
from agents.auxiliary import default_auxiliary_set
from agents.branches import messages_json
from agents.channel_check import channel_test
from agents.chat_model import ModelSwitchRefused
from agents.events import CompactionPreviewReady
from agents.history_pages import MessageNotFound, history_page, message_for_session
from agents.message_format import message_to_json
from agents.models import Agent, ChatSession, ModelChannel
from agents.selectors import HISTORY_VIEWS, HistoryView
from agents.services import session_create, session_delete, session_rename
from compaction import preview as compaction_preview
from compaction.outcome import CompactionOutcome
from compaction.request import CompactionRequest
from compaction.run import acompact
from system import dictionary
from system.models import DictInfo
from web.accounts import lockout_body
from web.api_errors import (
    ExceptionHandler,
    JSONBodyParser,
    api_exception_handler,
    as_api_exception,
    refusal_response,
)
from web.history_memory import history_served
from web.model_switch import switch_chat_model
from web.serializers import (
    AgentSerializer,
    CompactRequestSerializer,
    CompactResultSerializer,
    DictInfoSerializer,
    ErrorSerializer,
    MessagePageSerializer,
    MessageSerializer,
    ModelChannelSerializer,
    SessionCreateSerializer,
    SessionSerializer,
    SessionUpdateSerializer,
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
    token; bad credentials answer 400 with DRF's ``non_field_errors`` message. Throttled like
    the login page (django-axes, per account and per address): locked out, it answers 429
    ``{"detail", "reason": "login_locked", "retry_after"}``, even to the right password. An
    expired token is replaced by a new one.
    """

    authentication_classes = ()
    parser_classes = (JSONBodyParser, FormParser, MultiPartParser)

    @extend_schema(
        auth=[],
        responses={
            200: inline_serializer("AuthTokenResponse", {"token": serializers.CharField()}),
            400: OpenApiTypes.OBJECT,
            429: OpenApiTypes.OBJECT,
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        if not body.is_valid():
            if getattr(request, "axes_locked_out", False):  # set on DRF's request by axes
                locked = lockout_body()  # the view runs in the request's language
                retry_after = {"Retry-After": str(locked["retry_after"])}
                return Response(locked, status=429, headers=retry_after)
            raise exceptions.ValidationError(body.errors)
        token = accounts.token_issue(user=body.validated_data["user"])
        return Response({"token": token.key})


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

    @extend_schema(
        parameters=[SESSION_ID], request=SessionUpdateSerializer, responses=SessionSerializer
    )
    def patch(self, request: Request, session_id: str) -> Response:
        """Rename the chat (its owner's open pages follow: ``session_updated``) and/or
        switch its model (409 ``history_too_large`` with ``tokens``, ``threshold`` and
        ``window`` when its history no longer fits, unless ``compactFirst``)."""
        session = _own_session(request, session_id)
        body = SessionUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        wanted = body.validated_data
        if "modelChannel" in wanted:
            try:
                session = switch_chat_model(
                    session=session,
                    channel_id=wanted["modelChannel"],
                    compact_first=wanted["compactFirst"],
                ).session
            except ModelSwitchRefused as refused:
                extra = refused.fit.to_json() if refused.fit is not None else {}
                return refusal_response(refused.reason, **extra)
        if "title" in wanted:
            session = session_rename(session=session, title=wanted["title"])
        return Response(SessionSerializer(session).data)

    @extend_schema(parameters=[SESSION_ID], responses={204: None})
    def delete(self, request: Request, session_id: str) -> Response:
        """Delete the chat with its messages and its workspace (``session_deleted``)."""
        session_delete(session=_own_session(request, session_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


MESSAGES_DEFAULT_LIMIT = 100
MESSAGES_MAX_LIMIT = 500
# A page also stops before its text passes this many characters (at least one message is
# sent): 500 tool outputs of a megabyte each would otherwise be one 500 MB response.
MESSAGES_PAGE_CHARS = 2_000_000


class _BadQuery(ValueError):
    """A bad query parameter: answered 400 ``{"error", "reason"}``."""

    def __init__(self, error: str, reason: str) -> None:
        super().__init__(error)
        self.body = {"error": error, "reason": reason}


def _history_view(request: Request) -> HistoryView:
    view = request.query_params.get("view", "compacted")
    if view not in HISTORY_VIEWS:
        error = _("Unknown view %(view)r; use 'compacted' or 'full'.") % {"view": view}
        raise _BadQuery(error, "bad_view")
    return view  # type: ignore[return-value]


def _positive_int(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name, "")
    if raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18) or int(raw) < 1:
        error = _("'%(name)s' must be a positive integer.") % {"name": name}
        raise _BadQuery(error, f"bad_{name}")
    return int(raw)


class SessionMessagesView(ApiView):
    """One page of a session's history: ``?limit=N&before=<message id>`` (CONTRACT §4).

    The whole history of a long session is tens of megabytes: it is ``export_session``'s
    job. A page is at most ``MESSAGES_MAX_LIMIT`` messages and about ``MESSAGES_PAGE_CHARS``
    characters of text, oldest first; ``next`` fetches the page before it (the same view and
    limit), null on the first page of the history.
    """

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
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": MESSAGES_MAX_LIMIT},
                default=MESSAGES_DEFAULT_LIMIT,
                description=f"Messages per page: {MESSAGES_DEFAULT_LIMIT} by default, at "
                f"most {MESSAGES_MAX_LIMIT} (a larger limit is cut to {MESSAGES_MAX_LIMIT}). "
                f"A page of very long messages holds fewer: it stops before "
                f"{MESSAGES_PAGE_CHARS:,} characters of text (one message at least); follow "
                "`next` until it is null.",
            ),
            OpenApiParameter(
                "before",
                {"type": "integer", "minimum": 1},
                description="A message id of this session: the page ends right before it "
                "(in the history's order). Absent: the newest page.",
            ),
        ],
        responses={200: MessagePageSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request, session_id: str) -> Response:
        session = _own_session(request, session_id)
        try:
            view = _history_view(request)
            limit = min(
                _positive_int(request, "limit") or MESSAGES_DEFAULT_LIMIT, MESSAGES_MAX_LIMIT
            )
            before = _positive_int(request, "before")
        except _BadQuery as exc:
            return Response(exc.body, status=status.HTTP_400_BAD_REQUEST)
        try:
            page = history_page(
                session=session,
                view=view,
                before_id=before,
                size=limit,
                max_chars=MESSAGES_PAGE_CHARS,
            )
        except MessageNotFound as exc:
            raise exceptions.NotFound(_("No such message.")) from exc
        history_served(page.messages)
        next_url = None
        if page.has_earlier:
            query = urlencode({"view": view, "limit": limit, "before": page.first_id})
            next_url = request.build_absolute_uri(f"{request.path}?{query}")
        return Response(
            {
                "results": messages_json(session=session, messages=page.messages, view=view),
                "next": next_url,
            }
        )


class SessionMessageDetailView(ApiView):
    """One whole message (``GET /api/sessions/<id>/messages/<message id>/``): where a socket
    event that carried only a preview of a large message (``truncated``) points."""

    @extend_schema(
        parameters=[
            SESSION_ID,
            OpenApiParameter("message_id", OpenApiTypes.INT, OpenApiParameter.PATH),
            OpenApiParameter(
                "view", OpenApiTypes.STR, enum=list(HISTORY_VIEWS), default="compacted"
            ),
        ],
        responses={200: MessageSerializer, 400: ErrorSerializer},
        operation_id="sessions_message_retrieve",  # unique: check --deploy stays clean
    )
    def get(self, request: Request, session_id: str, message_id: int) -> Response:
        session = _own_session(request, session_id)
        try:
            view = _history_view(request)
        except _BadQuery as exc:
            return Response(exc.body, status=status.HTTP_400_BAD_REQUEST)
        try:
            message = message_for_session(session=session, message_id=message_id)
        except MessageNotFound as exc:
            raise exceptions.NotFound(_("No such message.")) from exc
        history_served([message])
        return Response(message_to_json(message, view=view))


# --- compaction -----------------------------------------------------------------------

# Every reason a compaction can end with → its HTTP status, read from the one reason table
# (agents.reasons: the socket's reasons, the page's texts and these statuses). 409: try again
# (a race lost: another compaction of the session, a history that moved under it, a stop);
# 422: the session or its configuration must change first; 502: the auxiliary model
# failed; 500: the server could not store the result.
COMPACTION_FAILURE_STATUS: dict[str, int] = {
    reason: reasons.http_status(reason) for reason in sorted(reasons.COMPACTION_OUTCOMES)
}
_STATUS_MEANING = {
    409: "try again later",
    422: "change the session or its configuration first",
    500: "the server could not store the result",
    502: "the auxiliary model failed",
}
_STATUS_MEANING_DOC = " ".join(
    f"{code} {' / '.join(sorted(r for r, c in COMPACTION_FAILURE_STATUS.items() if c == code))}: "
    f"{meaning}."
    for code, meaning in _STATUS_MEANING.items()
)


@dataclass(frozen=True, slots=True)
class CompactRequest:
    session_id: str
    instructions: str | None
    up_to: int | None = None  # issue 17 item 8: compact what comes before that message
    preview: bool = False  # issue 17 item 6: keep the summary as a preview, apply nothing
    user_id: int | None = None


class CompactPreviewRequestSerializer(CompactRequestSerializer):
    """The compact endpoint's body: ``CompactRequestSerializer`` and ``preview``."""

    preview = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: write the summary and apply nothing; the answer is the preview, "
        "which compact/previews/<id>/accept/ applies and DELETE compact/previews/<id>/ drops.",
    )


class CompactionPreviewSerializer(serializers.Serializer):
    """A preview (documentation only: ``compaction.preview.preview_json`` builds it)."""

    sessionId = serializers.UUIDField()
    previewId = serializers.IntegerField()
    summary = serializers.CharField(
        help_text="The summary as it would apply ('' when only old tool outputs would be pruned)."
    )
    removedCount = serializers.IntegerField()
    tokensBefore = serializers.IntegerField()
    tokensAfter = serializers.IntegerField()


def _error_reason_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with the body reshaped to the compact endpoint's ``{"error", "reason"}``."""
    exc = as_api_exception(exc)
    response = api_exception_handler(exc, context)
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


async def _compact(checked: CompactRequest) -> CompactionOutcome:
    """The compaction (or its preview); it publishes the token bar's new reading itself."""
    if checked.preview:
        outcome = await compaction_preview.apreview(
            checked.session_id,
            created_by=checked.user_id,
            instructions=checked.instructions,
            trigger="api",
            up_to=checked.up_to,
        )
    else:
        outcome = await acompact(
            CompactionRequest(
                checked.session_id,
                instructions=checked.instructions,
                trigger="api",
                up_to=checked.up_to,
            )
        )
    return outcome


def _outcome_response(outcome: CompactionOutcome) -> Response:
    if outcome.status == "previewed" and isinstance(outcome.event, CompactionPreviewReady):
        return Response(compaction_preview.preview_json(outcome.event))
    if outcome.status == "done":
        return Response(
            {
                "removed_count": outcome.removed_count,
                "summary_message_id": outcome.summary_message_id,
                "tokens_before": outcome.tokens_before,
                "tokens_after": outcome.tokens_after,
                "compaction_id": outcome.record_id,
            }
        )
    if outcome.status == "skipped":
        reason = "in_progress"
        message = reasons.message(reason)  # in the request's language
    else:
        fallback = "nothing_to_compact" if outcome.status == "nothing" else "internal_error"
        reason = outcome.reason or fallback
        message = outcome.error or reasons.wire_text(
            reason if reason in reasons.REASONS else fallback
        )
    return Response({"error": message, "reason": reason}, status=reasons.http_status(reason))


class SessionCompactView(ApiView):
    """``POST /api/sessions/<id>/compact/`` ``{"instructions"?, "upTo"?, "preview"?}``
    (CONTRACT §4, §7; ``preview``: README "Preview before applying").

    A plain DRF view: authentication (session cookie with CSRF, or token), permissions,
    throttles, the ownership gate and the body serializer run as for every endpoint, and
    every refusal is ``{"error", "reason"}`` (``get_exception_handler``). The compaction
    waits for the auxiliary model for up to a minute or two: under ASGI, Django runs each
    request's sync view in a thread of its own, the compaction runs on the event loop and
    in a thread of its own (``compaction.run.acompact``), and the loop stays free
    for every other request and socket of the process meanwhile.
    """

    http_method_names = ["post"]
    parser_classes = [JSONBodyParser]

    def get_exception_handler(self) -> ExceptionHandler:
        return _error_reason_handler

    @extend_schema(
        parameters=[SESSION_ID],
        request=CompactPreviewRequestSerializer,
        responses={
            200: PolymorphicProxySerializer(
                component_name="CompactOrPreview",
                serializers=[CompactResultSerializer, CompactionPreviewSerializer],
                resource_type_field_name=None,
            ),
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
            422: ErrorSerializer,
            500: ErrorSerializer,
            502: ErrorSerializer,
        },
        description=(
            "Compact the session now (reason manual) and wait for the result. On failure the "
            "history is unchanged and the body is {error, reason}. With preview: true the "
            "summary is written and kept as a preview (the answer), and nothing is applied. "
            + _STATUS_MEANING_DOC
        ),
    )
    def post(self, request: Request, session_id: str) -> Response:
        session = _own_session(request, session_id)
        body = CompactPreviewRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        checked = CompactRequest(
            str(session.pk),
            data["instructions"],
            data["upTo"],
            preview=data["preview"],
            user_id=request.user.pk,
        )
        return _outcome_response(async_to_sync(_compact)(checked))


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


class ModelChannelTestView(StaffApiView):
    """The channel page's connection test: the server's model list, in plain words."""

    @extend_schema(
        request=None,
        responses=inline_serializer(
            "ChannelTestResult",
            {
                "outcome": serializers.ChoiceField(choices=["ok", "no_listing", "failed"]),
                "models": serializers.ListField(child=serializers.CharField()),
                "model_listed": serializers.BooleanField(),
                "reason": serializers.CharField(allow_null=True),
                "status": serializers.IntegerField(allow_null=True),
                "error": serializers.CharField(allow_null=True),
            },
        ),
        description="Lists the server's models (GET /v1/models through the provider's SDK, "
        "10 s, no retry) with the saved settings and key. outcome no_listing: the server "
        "answered 404/405 there (a wrong base URL, or no model list); failed: reason, the "
        "provider's HTTP status and error in plain words.",
    )
    def post(self, request: Request, channel_id: int) -> Response:
        result = channel_test(channel=_channel(channel_id))
        failure = result.failure
        return Response(
            {
                "outcome": result.outcome,
                "models": list(result.models),
                "model_listed": result.model_listed,
                "reason": failure.reason if failure else None,
                "status": int(failure.status) if failure and failure.status else result.status,
                "error": failure.user_text() if failure else None,
            }
        )


class ModelChannelDefaultAuxiliaryView(StaffApiView):
    """Make the channel the system default auxiliary model (marking it auxiliary)."""

    @extend_schema(request=None, responses={200: ModelChannelSerializer, 400: OpenApiTypes.OBJECT})
    def post(self, request: Request, channel_id: int) -> Response:
        channel = _channel(channel_id)
        try:
            default_auxiliary_set(channel=channel)
        except DjangoValidationError as exc:
            raise exceptions.ValidationError({"enabled": exc.messages}) from None
        return Response(ModelChannelSerializer(channel).data)


# --- system dictionary (staff) --------------------------------------------------------


def _dict_entry(entry_id: int) -> DictInfo:
    entry = DictInfo.objects.select_related("type").filter(pk=entry_id).first()
    if entry is None:
        raise exceptions.NotFound(_("No such dictionary entry."))
    return entry


class DictEntryValues(TypedDict, total=False):
    """A dictionary entry's validated fields, as ``system.dictionary`` takes them."""

    type_key: str
    name: str
    value: str
    remark: str


def _dict_values(validated: dict[str, Any]) -> DictEntryValues:
    values = DictEntryValues()
    for key in ("name", "value", "remark"):
        if key in validated:
            values[key] = validated[key]
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
