"""The one set of rules for an agent's and a model channel's settings.

The models check them in ``clean()`` (so ``agents.configuration``'s writes, which
``full_clean()``, refuse what breaks them, whoever calls), and the page forms and the REST
serializers run the same validators on their fields, so a value is accepted by all of them
or by none: the threshold 30–95 % in steps of 5, the protected head 1–10 messages, a
context window of at least 1024 tokens, a base URL on http:// or https:// only.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

# An agent's compaction settings (seed §8.5, CONTRACT §3); the step is the page slider's.
THRESHOLD_PERCENT_MIN, THRESHOLD_PERCENT_MAX, THRESHOLD_PERCENT_STEP = 30, 95, 5
THRESHOLD_PERCENT_DEFAULT = 70
PROTECT_FIRST_N_MIN, PROTECT_FIRST_N_MAX, PROTECT_FIRST_N_DEFAULT = 1, 10, 3
# Issue 25: where the compacted view lands, as a percent of the threshold (headroom)
TARGET_PERCENT_MIN, TARGET_PERCENT_MAX, TARGET_PERCENT_DEFAULT = 20, 90, 60
# The smallest context window a channel may declare: below it no system prompt, message and
# answer fit, and the compaction threshold would be a handful of tokens.
CONTEXT_WINDOW_MIN = 1024
BASE_URL_SCHEMES = ("http", "https")

THRESHOLD_RANGE = format_lazy(
    _("The trigger threshold must be between {low}% and {high}%, in steps of {step}%."),
    low=THRESHOLD_PERCENT_MIN,
    high=THRESHOLD_PERCENT_MAX,
    step=THRESHOLD_PERCENT_STEP,
)
PROTECT_RANGE = format_lazy(
    _("The protected head must be between {low} and {high} messages."),
    low=PROTECT_FIRST_N_MIN,
    high=PROTECT_FIRST_N_MAX,
)
TARGET_RANGE = format_lazy(
    _("The compaction target must be between {low}% and {high}% of the threshold."),
    low=TARGET_PERCENT_MIN,
    high=TARGET_PERCENT_MAX,
)
CONTEXT_WINDOW_TOO_SMALL = format_lazy(
    _("The context window must be at least {low} tokens (or blank for the model's own)."),
    low=CONTEXT_WINDOW_MIN,
)
BASE_URL_SCHEME = _("Enter an http:// or https:// URL.")
# Issue 17: an agent's absolute compaction cap (tokens) and its standing instructions.
COMPACTION_TOKEN_CAP_MIN = 1024
COMPACTION_INSTRUCTIONS_MAX_CHARS = 2000
# A user's message (a chat frame, an edit, the OpenAI-compatible API's last message).
MESSAGE_MAX_CHARS = 200_000
TOKEN_CAP_TOO_SMALL = format_lazy(
    _("The compaction token cap must be at least {low} tokens (or blank for none)."),
    low=COMPACTION_TOKEN_CAP_MIN,
)


def validate_threshold_percent(value: int | None) -> None:
    if value is None:
        return
    if not THRESHOLD_PERCENT_MIN <= value <= THRESHOLD_PERCENT_MAX or (
        value % THRESHOLD_PERCENT_STEP
    ):
        raise ValidationError(THRESHOLD_RANGE, code="range")


def validate_threshold_step(value: int | None) -> None:
    """The step rule alone, for a field that checks the range with its own messages (the
    REST serializer's min/max); out of range is left to that field."""
    if value is not None and THRESHOLD_PERCENT_MIN <= value <= THRESHOLD_PERCENT_MAX:
        validate_threshold_percent(value)


def validate_protect_first_n(value: int | None) -> None:
    if value is not None and not PROTECT_FIRST_N_MIN <= value <= PROTECT_FIRST_N_MAX:
        raise ValidationError(PROTECT_RANGE, code="range")


def validate_target_percent(value: int | None) -> None:
    if value is not None and not TARGET_PERCENT_MIN <= value <= TARGET_PERCENT_MAX:
        raise ValidationError(TARGET_RANGE, code="range")


def validate_context_window(value: int | None) -> None:
    if value is not None and value < CONTEXT_WINDOW_MIN:
        raise ValidationError(CONTEXT_WINDOW_TOO_SMALL, code="min_value")


def validate_token_cap(value: int | None) -> None:
    if value is not None and value < COMPACTION_TOKEN_CAP_MIN:
        raise ValidationError(TOKEN_CAP_TOO_SMALL, code="min_value")


_well_formed = URLValidator(schemes=list(BASE_URL_SCHEMES))


def validate_base_url(value: str | None) -> None:
    if not value:
        return
    if urlsplit(value).scheme.lower() not in BASE_URL_SCHEMES:
        # its own code: a form field's "invalid" message would replace this one
        raise ValidationError(BASE_URL_SCHEME, code="scheme")
    _well_formed(value)


def check_fields(checks: dict[str, tuple[Any, Any]]) -> None:
    """Run ``{field: (validator, value)}``; one ValidationError naming every field that fails."""
    errors: dict[str, list[Any]] = {}
    for name, (validator, value) in checks.items():
        try:
            validator(value)
        except ValidationError as exc:
            errors[name] = exc.error_list
    if errors:
        raise ValidationError(errors)
