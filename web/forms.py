"""Forms of the chat and configuration pages; validation only, writes go to services."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypedDict

from django import forms
from django.db.models import QuerySet
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

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
    CompactionMode,
    CompactionStrategy,
    ModelChannel,
    Provider,
)
from agents.validation import (
    COMPACTION_INSTRUCTIONS_MAX_CHARS,
    COMPACTION_TOKEN_CAP_MIN,
    CONTEXT_WINDOW_MIN,
    THRESHOLD_PERCENT_STEP,
    validate_base_url,
    validate_context_window,
    validate_protect_first_n,
    validate_target_percent,
    validate_threshold_percent,
    validate_token_cap,
)

_THRESHOLD = {
    "low": THRESHOLD_PERCENT_MIN,
    "high": THRESHOLD_PERCENT_MAX,
    "step": THRESHOLD_PERCENT_STEP,
}
_PROTECT = {"low": PROTECT_FIRST_N_MIN, "high": PROTECT_FIRST_N_MAX}
_THRESHOLD_INVALID = format_lazy(
    _("Enter the trigger threshold as a whole number between {low} and {high}."), **_THRESHOLD
)
_PROTECT_INVALID = format_lazy(
    _("Enter the protected head as a whole number between {low} and {high}."), **_PROTECT
)


def model_choice(form: forms.BaseForm, name: str) -> forms.ModelChoiceField:
    """A form's model choice field, typed as one: its queryset depends on who asks, so it is
    set per instance, on the form's own copy of the field."""
    field = form.fields[name]
    if not isinstance(field, forms.ModelChoiceField):
        raise TypeError(f"{name} is not a model choice field")
    return field


class NewChatForm(forms.Form):
    agent = forms.ModelChoiceField(
        queryset=Agent.objects.none(),
        label=_("Agent"),
        empty_label=None,
        error_messages={"invalid_choice": _("Choose one of your agents.")},
    )

    def __init__(self, *args: Any, agents: QuerySet[Agent], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model_choice(self, "agent").queryset = agents


class AgentInitial(TypedDict):
    """An agent's settings as its form shows them (channels by id, ``shared``: no owner)."""

    name: str
    system_prompt: str
    model_channel: int | None
    auxiliary_model_channel: int | None
    compaction_strategy: str
    compaction_threshold_percent: int
    compaction_protect_first_n: int
    compaction_target_percent: int
    compaction_reground: bool
    search_history_enabled: bool
    compaction_notes: bool
    compaction_mode: str
    compaction_instructions: str
    compaction_token_cap: int | None
    shared: bool


class ChannelInitial(TypedDict):
    """A channel's settings as its form shows them (never its key)."""

    name: str
    provider: str
    base_url: str
    model: str
    context_window: int | None
    is_auxiliary: bool
    enabled: bool
    input_price_per_million: Decimal | None
    output_price_per_million: Decimal | None


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
                "min": THRESHOLD_PERCENT_MIN,
                "max": THRESHOLD_PERCENT_MAX,
                "step": THRESHOLD_PERCENT_STEP,
            }
        ),
        help_text=format_lazy(
            _(
                "{low}%–{high}%, in steps of {step}%. Automatic compaction starts when the "
                "context reaches this share of the model's window."
            ),
            **_THRESHOLD,
        ),
        error_messages={"invalid": _THRESHOLD_INVALID},
    )
    compaction_protect_first_n = forms.IntegerField(
        label=_("Protected head"),
        required=False,
        widget=forms.NumberInput(
            attrs={"min": PROTECT_FIRST_N_MIN, "max": PROTECT_FIRST_N_MAX, "step": 1}
        ),
        help_text=format_lazy(
            _("{low}–{high} messages at the start of the chat are never compacted."), **_PROTECT
        ),
        error_messages={"invalid": _PROTECT_INVALID},
    )
    compaction_target_percent = forms.IntegerField(
        label=_("Compaction target"),
        required=False,
        initial=TARGET_PERCENT_DEFAULT,
        widget=forms.NumberInput(
            attrs={"min": TARGET_PERCENT_MIN, "max": TARGET_PERCENT_MAX, "step": 5}
        ),
        help_text=format_lazy(
            _(
                "Where a compaction lands, in percent of the threshold ({low}–{high}): the room "
                "left before the next one."
            ),
            low=TARGET_PERCENT_MIN,
            high=TARGET_PERCENT_MAX,
        ),
    )
    compaction_reground = forms.BooleanField(
        label=_("Rebuild summaries from the originals"),
        required=False,
        help_text=_(
            "Every compaction summarizes the original messages again instead of updating the "
            "previous summary; it happens anyway once summaries of summaries run three deep."
        ),
    )
    search_history_enabled = forms.BooleanField(
        label=_("Search the compacted history"),
        required=False,
        help_text=_(
            "The agent may search and read the original messages that compaction replaced "
            "(the search_history and read_history_message tools)."
        ),
    )
    compaction_notes = forms.BooleanField(
        label=_("Notes before compaction"),
        required=False,
        help_text=_(
            "Before an automatic compaction the agent writes notes for itself (saved to "
            "NOTES.md in its workspace); they stay verbatim after the summary."
        ),
    )
    # issue 17 (CONTRACT §7): when automatic compaction runs, what it keeps, and a cap
    compaction_mode = forms.ChoiceField(
        label=_("Automatic compaction"),
        choices=CompactionMode.choices,
        initial=CompactionMode.AUTO,
        required=False,
        help_text=_(
            "Ask: at the threshold the chat asks before compacting. Off: only /compact compacts."
        ),
    )
    compaction_instructions = forms.CharField(
        label=_("Compaction instructions"),
        required=False,
        max_length=COMPACTION_INSTRUCTIONS_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("What every summary should keep or focus on; /compact <focus> adds to them."),
    )
    compaction_token_cap = forms.IntegerField(
        label=_("Compact at most at (tokens)"),
        required=False,
        min_value=COMPACTION_TOKEN_CAP_MIN,
        validators=[validate_token_cap],
        help_text=_(
            "Compact when the context reaches this many tokens, if that comes before the "
            "threshold (e.g. 200000 for a 1M-token model). Blank: the threshold only."
        ),
    )
    threshold_default = THRESHOLD_PERCENT_DEFAULT

    # One clear message per field, whatever rule is broken: the rules the API and the model
    # apply too (agents.validation).
    def clean_compaction_threshold_percent(self) -> int | None:
        value = self.cleaned_data.get("compaction_threshold_percent")
        validate_threshold_percent(value)
        return value

    def clean_compaction_target_percent(self) -> int | None:
        value = self.cleaned_data.get("compaction_target_percent")
        validate_target_percent(value)
        return value

    def clean_compaction_protect_first_n(self) -> int | None:
        value = self.cleaned_data.get("compaction_protect_first_n")
        validate_protect_first_n(value)
        return value

    def __init__(
        self,
        *args: Any,
        can_share: bool = False,
        default_auxiliary: ModelChannel | None = None,
        **kwargs: Any,
    ) -> None:
        """``can_share``: staff, who may share an agent with every user (the ``shared``
        field); ``default_auxiliary``: the system default, named in the inherit choice."""
        super().__init__(*args, **kwargs)
        enabled = ModelChannel.objects.filter(enabled=True)
        auxiliary = model_choice(self, "auxiliary_model_channel")
        model_choice(self, "model_channel").queryset = enabled
        auxiliary.queryset = enabled.filter(is_auxiliary=True)
        if default_auxiliary is not None and default_auxiliary.enabled:
            auxiliary.empty_label = format_lazy(
                _("Inherit the system default: {name}"), name=str(default_auxiliary)
            )
        if can_share:
            self.fields["shared"] = forms.BooleanField(
                label=_("Shared with every user"),
                required=False,
                help_text=_(
                    "Every user may chat with a shared agent; only staff may change it. "
                    "Unticked, the agent is yours alone."
                ),
            )

    @classmethod
    def initial_for_new(cls) -> AgentInitial:
        """A new agent's page starts at the defaults the model (and the API) give: a range
        input with no value would sit at its middle (65%, where the API says 70)."""
        return {**cls.initial_for(Agent()), "shared": False}

    @classmethod
    def initial_for(cls, agent: Agent) -> AgentInitial:
        return {
            "name": agent.name,
            "system_prompt": agent.system_prompt,
            "model_channel": agent.model_channel_id,
            "auxiliary_model_channel": agent.auxiliary_model_channel_id,
            "compaction_strategy": agent.compaction_strategy,
            "compaction_threshold_percent": agent.compaction_threshold_percent,
            "compaction_protect_first_n": agent.compaction_protect_first_n,
            "compaction_target_percent": agent.compaction_target_percent,
            "compaction_reground": agent.compaction_reground,
            "search_history_enabled": agent.search_history_enabled,
            "compaction_notes": agent.compaction_notes,
            "compaction_mode": agent.compaction_mode,
            "compaction_instructions": agent.compaction_instructions,
            "compaction_token_cap": agent.compaction_token_cap,
            "shared": agent.owner_id is None,
        }

    def settings(self) -> dict[str, Any]:
        """Cleaned values for ``agent_update``; blank means the system-level default."""
        data = dict(self.cleaned_data)
        if not data.get("compaction_strategy"):
            data["compaction_strategy"] = CompactionStrategy.LOSSY
        if data.get("compaction_threshold_percent") is None:
            data["compaction_threshold_percent"] = THRESHOLD_PERCENT_DEFAULT
        if data.get("compaction_protect_first_n") is None:
            data["compaction_protect_first_n"] = PROTECT_FIRST_N_DEFAULT
        if data.get("compaction_target_percent") is None:
            data["compaction_target_percent"] = TARGET_PERCENT_DEFAULT
        if not data.get("compaction_mode"):
            data["compaction_mode"] = CompactionMode.AUTO
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
        validators=[validate_base_url],
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
        min_value=CONTEXT_WINDOW_MIN,
        validators=[validate_context_window],
        help_text=_("Leave blank to use the known window of the model."),
    )
    is_auxiliary = forms.BooleanField(
        label=_("Usable as auxiliary model"),
        required=False,
        help_text=_("Ticked channels appear in the agent page's auxiliary model list."),
    )
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)
    input_price_per_million = forms.DecimalField(
        label=_("Input price per million tokens"),
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=4,
        help_text=_("Optional, in your currency: usage then shows a cost."),
    )
    output_price_per_million = forms.DecimalField(
        label=_("Output price per million tokens"),
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=4,
    )

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
    def initial_for(cls, channel: ModelChannel) -> ChannelInitial:
        return {
            "name": channel.name,
            "provider": channel.provider,
            "base_url": channel.base_url,
            "model": channel.model,
            "context_window": channel.context_window,
            "is_auxiliary": channel.is_auxiliary,
            "enabled": channel.enabled,
            "input_price_per_million": channel.input_price_per_million,
            "output_price_per_million": channel.output_price_per_million,
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
