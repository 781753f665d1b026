"""Forms of the chat and configuration pages; validation only, writes go to services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from agents.models import Agent, CompactionStrategy, ModelChannel, Provider

THRESHOLD_MIN, THRESHOLD_MAX, THRESHOLD_STEP, THRESHOLD_DEFAULT = 30, 95, 5, 70
PROTECT_MIN, PROTECT_MAX, PROTECT_DEFAULT = 1, 10, 3

_THRESHOLD_RANGE = _("The trigger threshold must be between 30% and 95%, in steps of 5%.")
_THRESHOLD_INVALID = _("Enter the trigger threshold as a whole number between 30 and 95.")
_PROTECT_RANGE = _("The protected head must be between 1 and 10 messages.")
_PROTECT_INVALID = _("Enter the protected head as a whole number between 1 and 10.")


class NewChatForm(forms.Form):
    agent = forms.ModelChoiceField(
        queryset=Agent.objects.none(),
        label=_("Agent"),
        empty_label=None,
        error_messages={"invalid_choice": _("Choose one of your agents.")},
    )

    def __init__(self, *args: Any, agents: QuerySet[Agent], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = agents  # type: ignore[attr-defined]


class AgentForm(forms.Form):
    """An agent's settings, with the seed's 「上下文压缩」 section (§8.5)."""

    name = forms.CharField(label=_("Name"), max_length=100)
    system_prompt = forms.CharField(
        label=_("System prompt"), required=False, widget=forms.Textarea(attrs={"rows": 5})
    )
    model_channel = forms.ModelChoiceField(
        queryset=ModelChannel.objects.none(),
        label=_("Model channel"),
        required=False,
        empty_label=_("— none (the agent cannot answer) —"),
    )
    auxiliary_model_channel = forms.ModelChoiceField(
        queryset=ModelChannel.objects.none(),
        label=_("Auxiliary model"),
        required=False,
        empty_label=_("Inherit the system default"),
        help_text=_("Only channels marked as usable as auxiliary model are listed."),
    )
    compaction_strategy = forms.ChoiceField(
        label=_("Compaction strategy"),
        choices=CompactionStrategy.choices,
        required=False,
        help_text=_("More strategies are in development"),
    )
    # One clear message per field, whatever rule is broken (min, max or step).
    compaction_threshold_percent = forms.IntegerField(
        label=_("Trigger threshold"),
        required=False,
        widget=forms.NumberInput(
            attrs={
                "type": "range",
                "min": THRESHOLD_MIN,
                "max": THRESHOLD_MAX,
                "step": THRESHOLD_STEP,
            }
        ),
        error_messages={"invalid": _THRESHOLD_INVALID},
    )
    compaction_protect_first_n = forms.IntegerField(
        label=_("Protected head"),
        required=False,
        widget=forms.NumberInput(attrs={"min": PROTECT_MIN, "max": PROTECT_MAX, "step": 1}),
        error_messages={"invalid": _PROTECT_INVALID},
    )

    def clean_compaction_threshold_percent(self) -> int | None:
        value = self.cleaned_data.get("compaction_threshold_percent")
        if value is not None and (
            not THRESHOLD_MIN <= value <= THRESHOLD_MAX or value % THRESHOLD_STEP
        ):
            raise forms.ValidationError(_THRESHOLD_RANGE, code="range")
        return value

    def clean_compaction_protect_first_n(self) -> int | None:
        value = self.cleaned_data.get("compaction_protect_first_n")
        if value is not None and not PROTECT_MIN <= value <= PROTECT_MAX:
            raise forms.ValidationError(_PROTECT_RANGE, code="range")
        return value

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        enabled = ModelChannel.objects.filter(enabled=True)
        self.fields["model_channel"].queryset = enabled  # type: ignore[attr-defined]
        self.fields["auxiliary_model_channel"].queryset = enabled.filter(is_auxiliary=True)  # type: ignore[attr-defined]

    @classmethod
    def initial_for(cls, agent: Agent) -> dict[str, Any]:
        return {
            "name": agent.name,
            "system_prompt": agent.system_prompt,
            "model_channel": agent.model_channel_id,
            "auxiliary_model_channel": agent.auxiliary_model_channel_id,
            "compaction_strategy": agent.compaction_strategy,
            "compaction_threshold_percent": agent.compaction_threshold_percent,
            "compaction_protect_first_n": agent.compaction_protect_first_n,
        }

    def settings(self) -> dict[str, Any]:
        """Cleaned values for ``agent_update``; blank means the system-level default."""
        data = dict(self.cleaned_data)
        if not data.get("compaction_strategy"):
            data["compaction_strategy"] = CompactionStrategy.LOSSY
        if data.get("compaction_threshold_percent") is None:
            data["compaction_threshold_percent"] = THRESHOLD_DEFAULT
        if data.get("compaction_protect_first_n") is None:
            data["compaction_protect_first_n"] = PROTECT_DEFAULT
        return data


class ChannelForm(forms.Form):
    """A model channel (§8.6). The key is write-only: never rendered back, blank keeps it."""

    name = forms.CharField(label=_("Name"), max_length=100)
    provider = forms.ChoiceField(label=_("Provider"), choices=Provider.choices)
    base_url = forms.URLField(
        label=_("Base URL"),
        required=False,
        max_length=500,
        assume_scheme="https",
        widget=forms.URLInput(attrs={"placeholder": "http://127.0.0.1:11434/v1"}),
        help_text=_(
            "Required for OpenAI-compatible servers, e.g. Ollama http://127.0.0.1:11434/v1 "
            "or vLLM http://127.0.0.1:8000/v1. Optional for the others (a proxy)."
        ),
    )
    api_key = forms.CharField(
        label=_("API key"),
        required=False,
        max_length=500,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    clear_api_key = forms.BooleanField(label=_("Remove the stored key"), required=False)
    model = forms.CharField(
        label=_("Model"),
        max_length=200,
        widget=forms.TextInput(attrs={"placeholder": "claude-sonnet-4-5 · gpt-4o · qwen2.5:7b"}),
    )
    context_window = forms.IntegerField(
        label=_("Context window (tokens)"),
        required=False,
        min_value=1024,
        help_text=_("Leave blank to use the known window of the model."),
    )
    is_auxiliary = forms.BooleanField(
        label=_("Usable as auxiliary model"),
        required=False,
        help_text=_("Ticked channels appear in the agent page's auxiliary model list."),
    )
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)

    def __init__(self, *args: Any, has_stored_key: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.has_stored_key = has_stored_key
        if has_stored_key:
            self.fields["api_key"].help_text = _("A key is set. Leave blank to keep it.")
        else:
            self.fields["api_key"].help_text = _(
                "Not set. Needed for Anthropic, OpenAI and DeepSeek; local servers usually "
                "need none."
            )

    @classmethod
    def initial_for(cls, channel: ModelChannel) -> dict[str, Any]:
        return {
            "name": channel.name,
            "provider": channel.provider,
            "base_url": channel.base_url,
            "model": channel.model,
            "context_window": channel.context_window,
            "is_auxiliary": channel.is_auxiliary,
            "enabled": channel.enabled,
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        provider = data.get("provider")
        if provider == Provider.OPENAI_COMPATIBLE and not data.get("base_url"):
            if "base_url" not in self.errors:
                self.add_error(
                    "base_url",
                    _(
                        "An OpenAI-compatible channel needs a base URL, "
                        "e.g. http://127.0.0.1:11434/v1 for Ollama."
                    ),
                )
        keeps_key = self.has_stored_key and not data.get("clear_api_key")
        if (
            provider in {Provider.ANTHROPIC, Provider.OPENAI, Provider.DEEPSEEK}
            and not data.get("api_key")
            and not keeps_key
        ):
            self.add_error("api_key", _("This provider needs an API key."))
        data["base_url"] = data.get("base_url") or ""
        return data

    def settings(self) -> dict[str, Any]:
        return dict(self.cleaned_data)
