"""Request validation and response shapes of the REST API (CONTRACT §4).

Serializers only validate and shape data; writes go through ``agents.services`` /
``agents.configuration`` and visibility through ``agents.access``. A message is
always serialized with ``agents.message_format.message_to_json`` (one shape for
REST, WebSocket and export), never here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from agents.access import agent_for_user
from agents.models import (
    PROTECT_FIRST_N_DEFAULT,
    PROTECT_FIRST_N_MAX,
    PROTECT_FIRST_N_MIN,
    TARGET_PERCENT_DEFAULT,
    TARGET_PERCENT_MAX,
    TARGET_PERCENT_MIN,
    THRESHOLD_PERCENT_DEFAULT,
    THRESHOLD_PERCENT_MAX,
    THRESHOLD_PERCENT_MIN,
    Agent,
    ChatSession,
    CompactionStrategy,
    ModelChannel,
    Provider,
)
from agents.services import TITLE_MAX_CHARS
from agents.validation import (
    validate_base_url,
    validate_context_window,
    validate_threshold_step,
    validate_token_cap,
)
from compaction.controls import SUMMARY_MAX_CHARS
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY
from system.models import DictInfo

if TYPE_CHECKING:  # django-stubs' type of a text or a lazy translation (development only)
    from django_stubs_ext import StrOrPromise

INSTRUCTIONS_MAX_CHARS = 2000


def _range_messages(field: str, low: int, high: int) -> dict[str, StrOrPromise]:
    message = format_lazy(
        _("{field} must be between {low} and {high}."), field=field, low=low, high=high
    )
    return {"min_value": message, "max_value": message}


class SharedField(serializers.BooleanField):
    """``shared`` reads as "the agent has no owner"; writing it is the owner's choice."""

    def get_attribute(self, instance: Agent) -> bool:
        return instance.owner_id is None


# --- sessions -------------------------------------------------------------------------


class ChatChannelSerializer(serializers.Serializer):
    """The model a chat talks to (issue 26 item 3): never its key."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    model = serializers.CharField()
    contextWindow = serializers.IntegerField(source="context_window")


class SessionSerializer(serializers.ModelSerializer):
    # ``model_channel``: the chat's own choice (null: its agent's); ``channel``: the one
    # it talks to, either way (null: neither has one)
    channel = ChatChannelSerializer(read_only=True, allow_null=True)

    class Meta:
        model = ChatSession
        fields = [
            "id",
            "agent",
            "title",
            "created_at",
            "updated_at",
            "compaction_count",
            "auto_compaction_paused_reason",
            "model_channel",
            "channel",
        ]
        read_only_fields = fields


class SessionCreateSerializer(serializers.Serializer):
    """``{"agent": id, "title"?}``; the agent must be visible to the requesting user."""

    agent = serializers.IntegerField()
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")

    def validate_agent(self, value: int) -> Agent:
        try:
            return agent_for_user(user=self.context["request"].user, agent_id=value)
        except LookupError as exc:
            raise serializers.ValidationError(
                _("Agent %(id)s does not exist or is not available to you.") % {"id": value}
            ) from exc


class SessionUpdateSerializer(serializers.Serializer):
    """``PATCH /api/sessions/<id>/``: ``{"title"}`` a new, non-blank title; ``{"modelChannel"}``
    the chat's own model (a channel id; null: its agent's again), ``compactFirst`` to compact
    the chat for that model when its history no longer fits (issue 26 item 3)."""

    title = serializers.CharField(max_length=TITLE_MAX_CHARS, allow_blank=False, required=False)
    modelChannel = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    compactFirst = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "title" not in attrs and "modelChannel" not in attrs:
            raise serializers.ValidationError(_("Give a title or a modelChannel."))
        return attrs


# --- compaction -----------------------------------------------------------------------


class CompactRequestSerializer(serializers.Serializer):
    instructions = serializers.CharField(
        max_length=INSTRUCTIONS_MAX_CHARS,
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        help_text=_("Optional focus for the summary, at most 2000 characters."),
    )

    upTo = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        help_text=_("A message id: compact only what comes before that message."),
    )

    def validate_instructions(self, value: str | None) -> str | None:
        return value or None


class CompactResultSerializer(serializers.Serializer):
    """The 200 answer of ``POST /api/sessions/<id>/compact/`` (documentation only)."""

    removed_count = serializers.IntegerField()
    summary_message_id = serializers.IntegerField(allow_null=True)
    tokens_before = serializers.IntegerField()
    tokens_after = serializers.IntegerField()
    compaction_id = serializers.IntegerField(allow_null=True)


class ErrorSerializer(serializers.Serializer):
    """``{"error", "reason"}``: a message for people and a code for programs."""

    error = serializers.CharField()
    reason = serializers.CharField()


class MessageSerializer(serializers.Serializer):
    """The shape ``agents.message_format.message_to_json`` produces (documentation only)."""

    id = serializers.IntegerField()
    role = serializers.ChoiceField(choices=["system", "user", "assistant", "tool"])
    content = serializers.CharField()
    position = serializers.IntegerField()
    created_at = serializers.DateTimeField(allow_null=True)
    compacted_at = serializers.DateTimeField(allow_null=True)
    compacted_into = serializers.IntegerField(allow_null=True)
    is_compaction_summary = serializers.BooleanField()
    pruned = serializers.BooleanField()
    pinned = serializers.BooleanField()
    metadata = serializers.DictField()
    tool_calls = serializers.ListField(child=serializers.DictField(), required=False)
    tool_call_id = serializers.CharField(required=False)


class MessagePageSerializer(serializers.Serializer):
    """One page of a history (documentation only): oldest first; ``next`` the page before."""

    results = MessageSerializer(many=True)
    next = serializers.URLField(allow_null=True)


# --- agents ---------------------------------------------------------------------------


class AgentSerializer(serializers.ModelSerializer):
    """An agent as its owner (or staff) edits it.

    ``shared`` (read: no owner) may be set only by staff; a non-staff user's agents
    are always their own.
    """

    shared = SharedField(required=False, default=False)
    model_channel = serializers.PrimaryKeyRelatedField(
        queryset=ModelChannel.objects.all(), allow_null=True, required=False
    )
    auxiliary_model_channel = serializers.PrimaryKeyRelatedField(
        queryset=ModelChannel.objects.all(),
        allow_null=True,
        required=False,
        help_text=_("A channel marked usable as auxiliary model; null inherits the default."),
    )
    compaction_strategy = serializers.ChoiceField(
        choices=CompactionStrategy.choices, required=False, default=CompactionStrategy.LOSSY
    )
    compaction_threshold_percent = serializers.IntegerField(
        min_value=THRESHOLD_PERCENT_MIN,
        max_value=THRESHOLD_PERCENT_MAX,
        required=False,
        default=THRESHOLD_PERCENT_DEFAULT,
        error_messages=_range_messages(
            "compaction_threshold_percent", THRESHOLD_PERCENT_MIN, THRESHOLD_PERCENT_MAX
        ),
        validators=[validate_threshold_step],  # the page's and the model's rule too
    )
    compaction_protect_first_n = serializers.IntegerField(
        min_value=PROTECT_FIRST_N_MIN,
        max_value=PROTECT_FIRST_N_MAX,
        required=False,
        default=PROTECT_FIRST_N_DEFAULT,
        error_messages=_range_messages(
            "compaction_protect_first_n", PROTECT_FIRST_N_MIN, PROTECT_FIRST_N_MAX
        ),
    )

    compaction_target_percent = serializers.IntegerField(
        min_value=TARGET_PERCENT_MIN,
        max_value=TARGET_PERCENT_MAX,
        required=False,
        default=TARGET_PERCENT_DEFAULT,
        error_messages=_range_messages(
            "compaction_target_percent", TARGET_PERCENT_MIN, TARGET_PERCENT_MAX
        ),
    )

    class Meta:
        model = Agent
        fields = [
            "id",
            "name",
            "system_prompt",
            "owner",
            "shared",
            "model_channel",
            "auxiliary_model_channel",
            "compaction_strategy",
            "compaction_threshold_percent",
            "compaction_protect_first_n",
            "compaction_target_percent",
            "compaction_reground",
            "search_history_enabled",
            "compaction_notes",
            "compaction_mode",
            "compaction_instructions",
            "compaction_token_cap",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "owner", "created_at", "updated_at"]
        # issue 17 (CONTRACT §7): the model's rules, as the agent page and the admin apply them
        extra_kwargs = {"compaction_token_cap": {"validators": [validate_token_cap]}}

    def validate_auxiliary_model_channel(self, value: ModelChannel | None) -> ModelChannel | None:
        if value is not None and not value.is_auxiliary:
            raise serializers.ValidationError(
                _("Channel %(id)s is not marked usable as auxiliary model.") % {"id": value.pk}
            )
        return value

    def validate_shared(self, value: bool) -> bool:
        user = self.context["request"].user
        if value and not user.is_staff:
            raise serializers.ValidationError(_("Only staff can share an agent with everyone."))
        return value


# --- model channels -------------------------------------------------------------------


class ModelChannelSerializer(serializers.ModelSerializer):
    """A model endpoint. ``api_key`` is write-only: responses carry ``has_api_key``."""

    api_key = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=500,
        trim_whitespace=True,
        style={"input_type": "password"},
        help_text=_("Write-only. Blank or absent on update keeps the stored key."),
    )
    clear_api_key = serializers.BooleanField(
        write_only=True,
        required=False,
        help_text=_("Write-only. True removes the stored key (on update)."),
    )
    has_api_key = serializers.BooleanField(read_only=True)

    class Meta:
        model = ModelChannel
        fields = [
            "id",
            "name",
            "provider",
            "base_url",
            "api_key",
            "clear_api_key",
            "has_api_key",
            "model",
            "context_window",
            "is_auxiliary",
            "enabled",
            "input_price_per_million",
            "output_price_per_million",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "has_api_key", "created_at", "updated_at"]
        # the channel page's rules (agents.validation): http(s) only, at least 1024 tokens
        extra_kwargs = {
            "base_url": {"validators": [validate_base_url]},
            "context_window": {"validators": [validate_context_window]},
        }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance: ModelChannel | None = self.instance
        provider = attrs.get("provider", instance.provider if instance else "")
        base_url = attrs.get("base_url", instance.base_url if instance else "")
        if provider == Provider.OPENAI_COMPATIBLE and not base_url:
            raise serializers.ValidationError(
                {"base_url": [_("base_url is required for the openai_compatible provider.")]}
            )
        return attrs


# --- system dictionary ----------------------------------------------------------------


class DictInfoSerializer(serializers.ModelSerializer):
    """One dictionary entry, addressed by its type's key (``netaclaw``) and its name."""

    type = serializers.SlugField(max_length=100, source="type.key")

    class Meta:
        model = DictInfo
        fields = ["id", "type", "name", "value", "remark"]
        read_only_fields = ["id"]
        validators: list[Any] = []  # uniqueness is checked in validate() by type key

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance: DictInfo | None = self.instance
        type_key = attrs.get("type", {}).get("key") or (instance.type.key if instance else "")
        name = attrs.get("name", instance.name if instance else "")
        value = attrs.get("value", instance.value if instance else "")
        clash = DictInfo.objects.filter(type__key=type_key, name=name)
        if instance is not None:
            clash = clash.exclude(pk=instance.pk)
        if clash.exists():
            raise serializers.ValidationError(
                {"name": [_("An entry named %(name)s already exists.") % {"name": name}]}
            )
        if type_key == NETACLAW_TYPE_KEY and name == DEFAULT_AUXILIARY_CHANNEL:
            _check_auxiliary_channel_id(value)
        return attrs


def _check_auxiliary_channel_id(value: str) -> None:
    try:
        channel = ModelChannel.objects.filter(pk=int(str(value).strip())).first()
    except ValueError:
        channel = None
    if channel is None:
        raise serializers.ValidationError(
            {"value": [_("%(value)r is not the id of a model channel.") % {"value": value}]}
        )
    if not channel.is_auxiliary:
        raise serializers.ValidationError(
            {
                "value": [
                    _("Channel %(id)s is not marked usable as auxiliary model.")
                    % {"id": channel.pk}
                ]
            }
        )


# --- compaction control (issue 17; CONTRACT §7) ----------------------------------------


class CompactionRecordSerializer(serializers.Serializer):
    """One compaction's audit record (documentation only: ``compaction.records.record_json``
    builds it); the detail adds ``instructions``, ``upTo``, ``undoneAt``, ``edits`` and
    ``dropped``."""

    id = serializers.IntegerField()
    summaryMessageId = serializers.IntegerField(allow_null=True)
    trigger = serializers.ChoiceField(choices=["auto", "manual", "api", "command"])
    status = serializers.ChoiceField(choices=["done", "failed", "cancelled", "skipped", "undone"])
    reason = serializers.CharField(allow_null=True)
    tokensBefore = serializers.IntegerField()
    tokensAfter = serializers.IntegerField()
    removedCount = serializers.IntegerField()
    auxiliaryChannel = serializers.CharField(allow_null=True)
    auxiliaryModel = serializers.CharField(allow_null=True)
    auxInputTokens = serializers.IntegerField(allow_null=True)
    auxOutputTokens = serializers.IntegerField(allow_null=True)
    requestCount = serializers.IntegerField()
    durationMs = serializers.IntegerField()
    startedAt = serializers.DateTimeField()


class DroppedFactSerializer(serializers.Serializer):
    value = serializers.CharField()
    kind = serializers.ChoiceField(choices=["number", "path", "url", "identifier"])
    messageId = serializers.IntegerField(allow_null=True)


class CompactionRecordDetailSerializer(CompactionRecordSerializer):
    instructions = serializers.CharField()
    upTo = serializers.IntegerField(allow_null=True)
    undoneAt = serializers.DateTimeField(allow_null=True)
    edits = serializers.ListField(child=serializers.DictField())
    dropped = DroppedFactSerializer(many=True)


class UndoResultSerializer(serializers.Serializer):
    restoredCount = serializers.IntegerField()


def refuse_nul(value: str) -> None:
    """A text field's validator: PostgreSQL cannot store a NUL character."""
    if "\x00" in value:
        raise serializers.ValidationError(
            _("The text contains a NUL character, which cannot be stored.")
        )


class MessagePatchSerializer(serializers.Serializer):
    """``{"pinned": bool}`` for any message, ``{"content": str}`` for a summary."""

    pinned = serializers.BooleanField(required=False)
    content = serializers.CharField(
        required=False,
        allow_blank=False,
        max_length=SUMMARY_MAX_CHARS,
        trim_whitespace=False,
        validators=[refuse_nul],
        help_text=_("Only a compaction summary's content can be edited"),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(_("Send 'pinned' or 'content'."))
        return attrs
