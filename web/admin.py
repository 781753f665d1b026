"""Admin for the chat domain; the API key is write-only here as everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from agents import configuration, services
from agents.auxiliary import default_auxiliary_settle
from agents.models import Agent, ChatSession, CompactionRecord, Message, ModelChannel
from agents.usage import session_usage
from chat.recovery import recover
from compaction.request import CompactionRequest
from compaction.run import compact
from system.models import DictInfo, DictType
from web.accounts import login_unlock

if TYPE_CHECKING:  # a development dependency: types only
    from django_stubs_ext import StrOrPromise


class ModelChannelAdminForm(forms.ModelForm):
    api_key = forms.CharField(
        label=_("API key"),
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Write-only. Leave blank to keep the stored key."),
    )
    clear_api_key = forms.BooleanField(label=_("Remove the stored key"), required=False)

    class Meta:
        model = ModelChannel
        fields = [
            "name",
            "provider",
            "base_url",
            "api_key",
            "clear_api_key",
            "model",
            "context_window",
            "is_auxiliary",
            "enabled",
            "input_price_per_million",
            "output_price_per_million",
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        if configuration.key_reentry_required(
            channel=self.instance,
            fields={k: data[k] for k in configuration.KEY_DESTINATION_FIELDS if k in data},
            api_key=data.get("api_key"),
            clear_api_key=bool(data.get("clear_api_key")),
        ):
            self.add_error("api_key", configuration.KEY_REENTRY_MESSAGE)
        if not data.get("api_key") and self.instance.pk and not data.get("clear_api_key"):
            data["api_key"] = self.instance.api_key
        if data.get("clear_api_key"):
            data["api_key"] = ""
        return data


@admin.register(ModelChannel)
class ModelChannelAdmin(admin.ModelAdmin):
    form = ModelChannelAdminForm
    list_display = [
        "name",
        "provider",
        "model",
        "context_window",
        "is_auxiliary",
        "enabled",
        "key_set",
    ]
    list_filter = ["provider", "is_auxiliary", "enabled"]
    search_fields = ["name", "model", "base_url"]

    @admin.display(boolean=True, description=_("key set"))
    def key_set(self, obj: ModelChannel) -> bool:
        return obj.has_api_key

    def save_model(
        self, request: HttpRequest, obj: ModelChannel, form: forms.ModelForm, change: bool
    ) -> None:
        """Saved as the pages and the API save: the default auxiliary model follows."""
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            default_auxiliary_settle(channel=obj)


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "owner",
        "model_channel",
        "auxiliary_model_channel",
        "compaction_threshold_percent",
        "compaction_protect_first_n",
        "compaction_target_percent",
        "compaction_mode",
        "search_history_enabled",
    ]
    list_filter = [
        "compaction_strategy",
        "compaction_mode",
        "search_history_enabled",
        "compaction_notes",
        "model_channel",
    ]
    search_fields = ["name", "system_prompt"]
    raw_id_fields = ["owner"]


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    can_delete = False
    show_change_link = True
    readonly_fields = (
        "position",
        "role",
        "short_content",
        "token_estimate",
        "is_compaction_summary",
        "compacted_at",
        "compacted_into",
        "pruned_at",
    )
    fields = readonly_fields
    ordering = ["position", "-is_compaction_summary", "-id"]

    @admin.display(description=_("content"))
    def short_content(self, obj: Message) -> str:
        text = obj.content or ("[tool calls]" if obj.tool_calls else "")
        return text if len(text) <= 160 else text[:157] + "…"

    def has_add_permission(self, request: HttpRequest, obj: ChatSession | None = None) -> bool:
        return False


class LeaseStateFilter(admin.SimpleListFilter):
    """Issue 24: which chats have work running, and which are stuck — held by a lease that
    expired without being given back (its process died and no sweep has taken it back)."""

    title = _("work")
    parameter_name = "work"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, StrOrPromise]]:
        return [("running", _("running now")), ("stuck", _("stuck (a dead lease)"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> Any:
        now = timezone.now()
        held = queryset.exclude(lease_holder="")
        if self.value() == "running":
            return held.filter(lease_expires_at__gt=now)
        if self.value() == "stuck":
            return held.filter(lease_expires_at__lte=now)
        return queryset


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "owner",
        "agent",
        "compaction_count",
        "updated_at",
        "paused",
        "work",
    ]
    list_filter = [LeaseStateFilter, "agent", "created_at"]
    search_fields = ["title", "id", "owner__username"]
    readonly_fields = [
        "id",
        "created_at",
        "updated_at",
        "compaction_count",
        "lease_holder",
        "lease_expires_at",
        "compacting_holder",
        "usage",
        "last_input_tokens",
        "last_input_position",
        "total_input_tokens",
        "total_output_tokens",
        "api_calls",
    ]
    raw_id_fields = ["owner"]
    inlines = [MessageInline]
    actions = ["compact_selected", "take_back_dead_leases"]

    @admin.display(description=_("usage"))
    def usage(self, obj: ChatSession) -> str:
        """Issue 25 item 8: the chat's and its compactions' tokens, and a cost with prices."""
        used = session_usage(session=obj).to_json()
        chat, aux, total = used["chat"], used["compaction"], used["total"]
        text = (
            f"chat {chat['inputTokens']} in / {chat['outputTokens']} out ({chat['apiCalls']} calls); "
            f"compaction {aux['inputTokens']} in / {aux['outputTokens']} out ({aux['requests']} requests)"
        )
        return text + (f"; cost {total['cost']}" if "cost" in total else "")

    @admin.display(description=_("work"))
    def work(self, obj: ChatSession) -> str:
        if not obj.lease_holder:
            return ""
        if obj.lease_expires_at is not None and obj.lease_expires_at > timezone.now():
            return str(_("running"))
        return str(_("stuck"))

    @admin.action(
        description=_("Take back the leases of stopped processes (records what they ran)")
    )
    def take_back_dead_leases(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        """Only expired leases: a live holder renews its lease, so an expired one is dead."""
        now = timezone.now()
        freed = 0
        for session in queryset.exclude(lease_holder="").filter(lease_expires_at__lte=now):
            recover(str(session.pk), dead=session.lease_holder)
            freed += 1
        self.message_user(request, _("%(n)d session(s) taken back.") % {"n": freed})

    @admin.action(description=_("Compact the selected sessions now"))
    def compact_selected(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        for session in queryset:
            outcome = compact(CompactionRequest(str(session.pk), trigger="manual"))
            if outcome.status == "done":
                self.message_user(
                    request,
                    _("%(session)s: removed %(n)d messages, tokens %(before)d → %(after)d")
                    % {
                        "session": session,
                        "n": outcome.removed_count,
                        "before": outcome.tokens_before,
                        "after": outcome.tokens_after,
                    },
                    messages.SUCCESS,
                )
            else:
                self.message_user(
                    request, f"{session}: {outcome.reason}: {outcome.error}", messages.ERROR
                )

    def delete_model(self, request: HttpRequest, obj: ChatSession) -> None:
        services.session_delete(session=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        for session in queryset:  # one by one: each session's workspace goes with it
            services.session_delete(session=session)

    @admin.display(boolean=True, description=_("auto-compaction paused"))
    def paused(self, obj: ChatSession) -> bool:
        return bool(obj.auto_compaction_paused_reason)


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "session",
        "position",
        "role",
        "is_compaction_summary",
        "compacted_at",
        "pruned_at",
        "pinned",
        "token_estimate",
    ]
    list_filter = [
        "role",
        "is_compaction_summary",
        "pinned",
        ("compacted_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["content", "session__id"]
    raw_id_fields = ["session", "compacted_into"]
    list_select_related = ["session"]


@admin.register(CompactionRecord)
class CompactionRecordAdmin(admin.ModelAdmin):
    """The audit of every compaction (issue 17 item 9): read-only, written by the service."""

    list_display = [
        "started_at",
        "session",
        "trigger",
        "status",
        "reason",
        "tokens_before",
        "tokens_after",
        "removed_count",
        "auxiliary_model",
        "aux_input_tokens",
        "aux_output_tokens",
        "request_count",
        "duration_ms",
    ]
    list_filter = ["trigger", "status", "reason"]
    search_fields = ["session__id", "session__title", "reason", "auxiliary_model"]
    list_select_related = ["session"]
    date_hierarchy = "started_at"

    def get_readonly_fields(
        self, request: HttpRequest, obj: CompactionRecord | None = None
    ) -> list[str]:
        return [f.name for f in CompactionRecord._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: CompactionRecord | None = None
    ) -> bool:
        return False


class DictInfoInline(admin.TabularInline):
    model = DictInfo
    extra = 0


@admin.register(DictType)
class DictTypeAdmin(admin.ModelAdmin):
    list_display = ["key", "name"]
    search_fields = ["key", "name"]
    inlines = [DictInfoInline]


@admin.register(DictInfo)
class DictInfoAdmin(admin.ModelAdmin):
    list_display = ["type", "name", "value", "remark"]
    list_filter = ["type"]
    search_fields = ["name", "value"]


# --- unlocking logins (django-axes; web.accounts.login_unlock) ----------------------------


class UnlockingAccessAttemptAdmin(AccessAttemptAdmin):
    """Axes' list of failed logins, with an action that lifts the selected lockouts."""

    actions = [*AccessAttemptAdmin.actions, "unlock"]

    @admin.action(description=_("Unlock: clear the selected failed logins"))
    def unlock(self, request: Any, queryset: Any) -> None:
        cleared = sum(login_unlock(username=a.username, address=a.ip_address) for a in queryset)
        self.message_user(request, _("Cleared %(count)s failed logins.") % {"count": cleared})


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, UnlockingAccessAttemptAdmin)


User = get_user_model()


class UnlockingUserAdmin(UserAdmin):
    """Django's user admin, with an action that lets the selected accounts log in again
    from every address."""

    actions = ["unlock_logins"]

    def delete_model(self, request: Any, obj: Any) -> None:
        self.delete_queryset(request, type(obj)._default_manager.filter(pk=obj.pk))

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        """The users' chats first, each as the chat pages delete one (its messages in
        batches, its workspace): a cascade from the user named every message of a chat in
        one statement, too many for PostgreSQL past 65,535."""
        with transaction.atomic():
            for session in ChatSession.objects.filter(owner__in=queryset):
                services.session_delete(session=session)
            queryset.delete()

    @admin.action(description=_("Unlock logins of the selected users"))
    def unlock_logins(self, request: Any, queryset: Any) -> None:
        cleared = sum(login_unlock(username=user.get_username()) for user in queryset)
        self.message_user(request, _("Cleared %(count)s failed logins.") % {"count": cleared})


admin.site.unregister(User)
admin.site.register(User, UnlockingUserAdmin)
