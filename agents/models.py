"""The chat domain: model channels, agents, sessions and their messages (seed §5)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from agents import validation
from agents.validation import (  # the limits live with their rules; imported from here too
    COMPACTION_INSTRUCTIONS_MAX_CHARS,
    COMPACTION_TOKEN_CAP_MIN,
    PROTECT_FIRST_N_DEFAULT,
    PROTECT_FIRST_N_MAX,
    PROTECT_FIRST_N_MIN,
    TARGET_PERCENT_DEFAULT,
    TARGET_PERCENT_MAX,
    TARGET_PERCENT_MIN,
    THRESHOLD_PERCENT_DEFAULT,
    THRESHOLD_PERCENT_MAX,
    THRESHOLD_PERCENT_MIN,
)


class Provider(models.TextChoices):
    ANTHROPIC = "anthropic", "Anthropic"
    OPENAI = "openai", "OpenAI"
    DEEPSEEK = "deepseek", "DeepSeek"
    OPENAI_COMPATIBLE = "openai_compatible", _("OpenAI-compatible (Ollama, vLLM, …)")


class ModelChannel(models.Model):
    """A configured model endpoint; its key never leaves the server."""

    name = models.CharField(_("name"), max_length=100)
    provider = models.CharField(_("provider"), max_length=32, choices=Provider.choices)
    base_url = models.URLField(_("base URL"), max_length=500, blank=True)
    api_key = models.CharField(_("API key"), max_length=500, blank=True)
    model = models.CharField(_("model"), max_length=200)
    context_window = models.PositiveIntegerField(
        _("context window (tokens)"),
        null=True,
        blank=True,
        help_text=_("Leave blank to use the known window of the model."),
    )
    is_auxiliary = models.BooleanField(_("usable as auxiliary model"), default=False)
    enabled = models.BooleanField(_("enabled"), default=True)
    # optional prices, per million tokens, in the operator's currency: usage shows a cost
    input_price_per_million = models.DecimalField(
        _("input price per million tokens"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
    )
    output_price_per_million = models.DecimalField(
        _("output price per million tokens"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("model channel")
        verbose_name_plural = _("model channels")
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(provider__in=[p.value for p in Provider]),
                name="modelchannel_provider_valid",
            ),
            models.CheckConstraint(
                condition=~Q(provider=Provider.OPENAI_COMPATIBLE) | ~Q(base_url=""),
                name="modelchannel_compatible_needs_base_url",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.provider}:{self.model})"

    def __repr__(self) -> str:  # never show the key, even in tracebacks
        return f"<ModelChannel {self.pk} {self.provider}:{self.model}>"

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key)

    def clean(self) -> None:
        """The rules the channel page, the API and the admin share (``agents.validation``)."""
        validation.check_fields(
            {
                "base_url": (validation.validate_base_url, self.base_url),
                "context_window": (validation.validate_context_window, self.context_window),
            }
        )


class CompactionStrategy(models.TextChoices):
    LOSSY = "lossy", _("Lossy summary")


class CompactionMode(models.TextChoices):
    """When automatic compaction runs (``compaction.trigger``); manual compaction always works."""

    AUTO = "auto", _("automatically at the threshold")
    ASK = "ask", _("ask at the threshold")
    OFF = "off", _("off (only /compact)")


class Agent(models.Model):
    name = models.CharField(_("name"), max_length=100)
    system_prompt = models.TextField(_("system prompt"), blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="agents",
        help_text=_("Blank: shared with every user."),
    )
    model_channel = models.ForeignKey(
        ModelChannel,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="agents",
        verbose_name=_("model channel"),
    )
    auxiliary_model_channel = models.ForeignKey(
        ModelChannel,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="auxiliary_for_agents",
        verbose_name=_("auxiliary model channel"),
        help_text=_("Blank: inherit the system default."),
    )
    compaction_strategy = models.CharField(
        _("compaction strategy"),
        max_length=32,
        choices=CompactionStrategy.choices,
        default=CompactionStrategy.LOSSY,
    )
    compaction_threshold_percent = models.PositiveSmallIntegerField(
        _("compaction threshold (%)"), default=THRESHOLD_PERCENT_DEFAULT
    )
    compaction_protect_first_n = models.PositiveSmallIntegerField(
        _("protected head messages"), default=PROTECT_FIRST_N_DEFAULT
    )
    # Issue 25: where a compaction lands, as a percent of the threshold (room to go on)
    compaction_target_percent = models.PositiveSmallIntegerField(
        _("compaction target (percent of the threshold)"), default=TARGET_PERCENT_DEFAULT
    )
    # Rebuild every summary from the kept originals instead of from the previous summary
    # (condense.regrounding; done anyway once the chain of summaries is deep).
    compaction_reground = models.BooleanField(
        _("rebuild summaries from the originals"),
        default=False,
        help_text=_(
            "Every compaction summarizes the original messages again instead of updating the "
            "previous summary; it happens anyway once summaries of summaries run three deep."
        ),
    )
    # The search_history and read_history_message tools (recall over compacted originals).
    search_history_enabled = models.BooleanField(
        _("search the compacted history"),
        default=True,
        help_text=_(
            "The agent may search and read the original messages that compaction replaced."
        ),
    )
    # Issue 17, the user in control of compaction (CONTRACT §7).
    compaction_mode = models.CharField(
        _("automatic compaction"),
        max_length=8,
        choices=CompactionMode.choices,
        default=CompactionMode.AUTO,
        help_text=_(
            "auto: compact at the threshold; ask: suggest it at the threshold; off: only "
            "when asked (/compact)."
        ),
    )
    compaction_instructions = models.TextField(
        _("compaction instructions"),
        blank=True,
        max_length=COMPACTION_INSTRUCTIONS_MAX_CHARS,
        help_text=_("What every summary of this agent's chats should keep or focus on."),
    )
    compaction_token_cap = models.PositiveIntegerField(
        _("compaction token cap"),
        null=True,
        blank=True,
        help_text=_(
            "Compact at this many tokens even below the threshold percentage; blank: no cap."
        ),
    )
    # One bounded step before an automatic compaction in which the agent writes its own
    # notes, kept verbatim after the summary (compaction.notes).
    compaction_notes = models.BooleanField(
        _("notes before compaction"),
        default=False,
        help_text=_(
            "Before an automatic compaction the agent writes notes for itself (saved to "
            "NOTES.md in its workspace); they stay verbatim after the summary."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(compaction_threshold_percent__gte=THRESHOLD_PERCENT_MIN)
                & Q(compaction_threshold_percent__lte=THRESHOLD_PERCENT_MAX),
                name="agent_threshold_30_95",
            ),
            models.CheckConstraint(
                condition=Q(compaction_protect_first_n__gte=PROTECT_FIRST_N_MIN)
                & Q(compaction_protect_first_n__lte=PROTECT_FIRST_N_MAX),
                name="agent_protect_first_n_1_10",
            ),
            models.CheckConstraint(
                condition=Q(compaction_target_percent__gte=TARGET_PERCENT_MIN)
                & Q(compaction_target_percent__lte=TARGET_PERCENT_MAX),
                name="agent_target_percent_20_90",
            ),
            models.CheckConstraint(
                condition=Q(compaction_strategy__in=[s.value for s in CompactionStrategy]),
                name="agent_strategy_valid",
            ),
            models.CheckConstraint(
                condition=Q(compaction_mode__in=[m.value for m in CompactionMode]),
                name="agent_compaction_mode_valid",
            ),
            models.CheckConstraint(
                condition=Q(compaction_token_cap__isnull=True)
                | Q(compaction_token_cap__gte=COMPACTION_TOKEN_CAP_MIN),
                name="agent_compaction_token_cap_min",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The rules the agent page, the API and the admin share (``agents.validation``)."""
        validation.check_fields(
            {
                "compaction_threshold_percent": (
                    validation.validate_threshold_percent,
                    self.compaction_threshold_percent,
                ),
                "compaction_protect_first_n": (
                    validation.validate_protect_first_n,
                    self.compaction_protect_first_n,
                ),
                "compaction_token_cap": (
                    validation.validate_token_cap,
                    self.compaction_token_cap,
                ),
                "compaction_target_percent": (
                    validation.validate_target_percent,
                    self.compaction_target_percent,
                ),
            }
        )


class ChatSession(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions"
    )
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="sessions")
    # Issue 26 item 3: this chat's model, over its agent's (None: the agent's); the token
    # bar, the window and the threshold follow it (``channel``).
    model_channel = models.ForeignKey(
        ModelChannel,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("model channel of this chat"),
    )
    title = models.CharField(_("title"), max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    compaction_count = models.PositiveIntegerField(_("compactions"), default=0)
    # DESIGN 5: the session lease (``agents.leases``): the one holder that runs this
    # session's turn or compaction, anywhere, until it expires (renewed while it works); a
    # chat message that arrives meanwhile waits, queued.
    lease_holder = models.CharField(max_length=96, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # A stop asked the work of this holder to end (read by its heartbeat and between steps).
    lease_stop_holder = models.CharField(max_length=96, blank=True)
    # The holder whose compaction runs now (under its lease, inside a turn or on its own).
    compacting_holder = models.CharField(max_length=96, blank=True)
    # A stop cancelled the compaction of this holder (announced by the stop, at once).
    compaction_cancelled_holder = models.CharField(max_length=96, blank=True)
    # DESIGN 9: runaway protection for automatic compaction.
    auto_compaction_paused_reason = models.CharField(max_length=200, blank=True)
    consecutive_compaction_failures = models.PositiveSmallIntegerField(default=0)
    # Token meter inputs (DESIGN 13): what the provider reported for the last call.
    last_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    last_input_position = models.PositiveBigIntegerField(null=True, blank=True)
    total_input_tokens = models.PositiveBigIntegerField(default=0)
    total_output_tokens = models.PositiveBigIntegerField(default=0)
    api_calls = models.PositiveIntegerField(default=0)
    todos = models.JSONField(default=list, blank=True)
    # Issue 17 item 10: measured ÷ estimated tokens when the last compaction ran, so the meter
    # (and every compaction figure) stays in the provider's count until the next report.
    token_calibration = models.FloatField(null=True, blank=True)
    # Issue 17 item 4 (mode ``ask``): when compaction was suggested; cleared by a compaction.
    compaction_suggested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("chat session")
        verbose_name_plural = _("chat sessions")
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="session_owner_recent")]

    def __str__(self) -> str:
        return self.title or str(self.id)

    @property
    def channel(self) -> ModelChannel | None:
        """The model this chat talks to: its own choice, else its agent's."""
        if self.model_channel_id is not None:
            return self.model_channel
        return self.agent.model_channel


class Role(models.TextChoices):
    SYSTEM = "system", _("system")
    USER = "user", _("user")
    ASSISTANT = "assistant", _("assistant")
    TOOL = "tool", _("tool")


# ``metadata.systemType`` of the record of a chat turn that failed or was stopped (a
# bubble with Retry on the page; never sent to a model).
SYSTEM_TYPE_TURN = "turn_event"
# ``metadata.systemType`` of a compaction's bubble (done, failed, skipped).
SYSTEM_TYPE_COMPACTION = "compaction_event"


class MessageQuerySet(models.QuerySet["Message"]):
    def on_branch(self) -> MessageQuerySet:
        """The messages of the active branch: every one not set aside in another version
        of a regenerated or edited turn (issue 26 item 1)."""
        return self.filter(fork__isnull=True)


class Message(models.Model):
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    # DESIGN 1: explicit order (``agents.positions``); a summary takes the position of the
    # first message it replaces and sorts before it (summaries first at equal position).
    position = models.PositiveBigIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    token_estimate = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    compacted_at = models.DateTimeField(null=True, blank=True)
    compacted_into = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="replaced"
    )
    is_compaction_summary = models.BooleanField(default=False)
    pruned_at = models.DateTimeField(null=True, blank=True)
    # A user's message sent while a turn ran: stored at once, out of every history view
    # until the next turn releases it to the end of the history.
    queued_at = models.DateTimeField(null=True, blank=True)
    # Issue 17 item 2: never summarized away; stays verbatim in the compacted view.
    pinned = models.BooleanField(_("pinned"), default=False)
    # Issue 26 item 1: set aside in ``fork_version`` of ``fork`` (a regenerated answer's or an
    # edited message's other version): in no history view and never sent to a model until
    # that version is chosen again; None — on the active branch.
    fork = models.ForeignKey(
        "MessageFork", on_delete=models.CASCADE, null=True, blank=True, related_name="parked"
    )
    fork_version = models.PositiveSmallIntegerField(null=True, blank=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["position", "-is_compaction_summary", "-id"]
        indexes = [
            models.Index(fields=["session", "compacted_at"], name="message_session_compacted"),
            models.Index(
                fields=["session", "is_compaction_summary"], name="message_session_summary"
            ),
            models.Index(fields=["session", "position"], name="message_session_position"),
            models.Index(
                fields=["session"],
                condition=Q(queued_at__isnull=False),
                name="message_session_queued",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="message_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}#{self.pk} @{self.position}"

    @property
    def is_system_event(self) -> bool:
        """Records of what happened (compaction bubbles); never sent to a model."""
        return self.role == Role.SYSTEM and bool(self.metadata.get("systemType"))


class ForkKind(models.TextChoices):
    REGENERATE = "regenerate", _("regenerated answer")
    EDIT = "edit", _("edited message")


class MessageFork(models.Model):
    """Where a conversation took another way (issue 26 item 1): a regenerated answer or an
    edited message. Each version runs from ``start_position`` to the end of the
    conversation; the chosen one is the history, the others wait set aside on their
    messages (``Message.fork``), as LibreChat keeps its branches. ``anchor``: the user's
    message a regenerated answer answers; ``heads``: the ids of an edit's versions of the
    user's message, one per version."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="forks")
    kind = models.CharField(max_length=16, choices=ForkKind.choices)
    start_position = models.PositiveBigIntegerField()
    anchor = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    heads = models.JSONField(default=list, blank=True)
    versions = models.PositiveSmallIntegerField(default=1)
    selected = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("message fork")
        verbose_name_plural = _("message forks")
        ordering = ["start_position", "id"]

    def __str__(self) -> str:
        return f"{self.kind} fork #{self.pk} ({self.selected}/{self.versions})"


# --- compaction control (issue 17) ---------------------------------------------------


class CompactionTrigger(models.TextChoices):
    AUTO = "auto", _("automatic")
    MANUAL = "manual", _("manual")
    API = "api", _("API")
    COMMAND = "command", _("command")


class CompactionStatus(models.TextChoices):
    RUNNING = "running", _("running")
    INTERRUPTED = "interrupted", _("interrupted")  # its process died or stopped mid-way
    DONE = "done", _("done")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")
    SKIPPED = "skipped", _("skipped")
    UNDONE = "undone", _("undone")


class CompactionRecord(models.Model):
    """The audit of one compaction (issue 17 item 9): who asked, what it cost, how it ended.

    Written for every path (socket, REST, command, admin, automatic); a done one also keeps
    what undo needs (the pruned ids) and what the summary dropped."""

    session = models.ForeignKey(
        ChatSession, on_delete=models.CASCADE, related_name="compaction_records"
    )
    summary_message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    event_message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    trigger = models.CharField(_("trigger"), max_length=16, choices=CompactionTrigger.choices)
    status = models.CharField(_("status"), max_length=16, choices=CompactionStatus.choices)
    reason = models.CharField(_("reason"), max_length=64, blank=True)
    error = models.TextField(_("error"), blank=True)
    tokens_before = models.PositiveIntegerField(_("tokens before"), default=0)
    tokens_after = models.PositiveIntegerField(_("tokens after"), default=0)
    removed_count = models.PositiveIntegerField(_("removed messages"), default=0)
    pruned_ids = models.JSONField(default=list, blank=True)
    auxiliary_channel = models.CharField(_("auxiliary channel"), max_length=100, blank=True)
    auxiliary_model = models.CharField(_("auxiliary model"), max_length=200, blank=True)
    aux_input_tokens = models.PositiveIntegerField(
        _("auxiliary input tokens"), null=True, blank=True
    )
    aux_output_tokens = models.PositiveIntegerField(
        _("auxiliary output tokens"), null=True, blank=True
    )
    request_count = models.PositiveIntegerField(_("requests"), default=0)
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), default=0)
    started_at = models.DateTimeField(_("started at"))
    instructions = models.TextField(_("instructions"), blank=True)
    up_to_message_id = models.PositiveBigIntegerField(null=True, blank=True)
    # issue 25: where the view should have landed, whether it did, answers asked for again
    target_tokens = models.PositiveIntegerField(null=True, blank=True)
    reached_target = models.BooleanField(null=True, blank=True)
    discarded_requests = models.PositiveSmallIntegerField(default=0)
    # the REST call that waits for this compaction, whichever process runs it (issue 24)
    request_id = models.CharField(max_length=36, blank=True, db_index=True)
    undone_at = models.DateTimeField(_("undone at"), null=True, blank=True)
    edits = models.JSONField(_("edits"), default=list, blank=True)
    dropped = models.JSONField(_("dropped facts"), default=list, blank=True)

    class Meta:
        verbose_name = _("compaction record")
        verbose_name_plural = _("compaction records")
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["session", "-started_at"], name="compaction_record_session"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(trigger__in=[t.value for t in CompactionTrigger]),
                name="compaction_record_trigger_valid",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in CompactionStatus]),
                name="compaction_record_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.trigger} {self.status} #{self.pk}"


class CompactionPreview(models.Model):
    """A manual compaction's summary, shown before it applies (issue 17 item 6).

    What the write-back needs to apply exactly that summary to exactly that span later —
    the ids it replaces and prunes, and a fingerprint of the history it was made from — so
    accepting it calls no model. At most one per session (a new one replaces it); it
    expires (``compaction.preview.PREVIEW_TTL``) and is never sent to a model."""

    session = models.ForeignKey(
        ChatSession, on_delete=models.CASCADE, related_name="compaction_previews"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # the summary message's whole content, as the write-back would store it
    summary = models.TextField(_("summary"))
    # (id, is summary, pinned, content hash) of each message the summary was made from
    fingerprint = models.JSONField(default=list, blank=True)
    instructions = models.TextField(_("instructions"), blank=True)
    up_to_message_id = models.PositiveBigIntegerField(null=True, blank=True)
    tokens_before = models.PositiveIntegerField(_("tokens before"), default=0)
    tokens_after = models.PositiveIntegerField(_("tokens after"), default=0)
    # the write-back's inputs: summarized and pruned ids, language, chain depth, calibration…
    result = models.JSONField(default=dict, blank=True)
    # the audit of the summary's making (channel, model, usage, requests, duration, trigger)
    audit = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=36, blank=True, db_index=True)  # as the record's
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("compaction preview")
        verbose_name_plural = _("compaction previews")
        constraints = [
            models.UniqueConstraint(fields=["session"], name="compaction_preview_one_per_session"),
        ]

    def __str__(self) -> str:
        return f"preview #{self.pk} of {self.session_id}"
