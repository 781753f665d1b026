"""Which channel summarizes an agent's chats: the agent's own choice, else the system default
(the dictionary entry ``netaclaw.default_auxiliary_channel_id``, seed §4.1).

One rule for the compaction that uses it (``compaction.auxiliary``) and the pages that show
it. The default is kept so that following the channel page is enough for a first
``/compact``: the first channel marked auxiliary becomes the default when there is none, and
a default that stops being usable hands over to another auxiliary channel
(``default_auxiliary_settle``, called by every channel write: page, API and admin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from agents.models import Agent, ModelChannel
from system.dictionary import (
    DEFAULT_AUXILIARY_CHANNEL,
    NETACLAW_TYPE_KEY,
    dict_delete,
    dict_set,
    dict_value,
)

AuxiliarySource = Literal["agent", "default", "none"]

DISABLED_DEFAULT = _("A disabled channel cannot be the default auxiliary model; enable it first.")


def default_auxiliary_channel() -> ModelChannel | None:
    """The channel the dictionary entry names, enabled or not (None: unset or gone)."""
    raw = dict_value(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL)
    if raw is None or not raw.strip().isdigit():
        return None
    return ModelChannel.objects.filter(pk=int(raw)).first()


@dataclass(frozen=True, slots=True)
class AuxiliaryChoice:
    """The channel compaction will summarize with (None: it fails with
    ``no_auxiliary_model``), where it comes from, and what was passed over and why."""

    channel: ModelChannel | None
    source: AuxiliarySource
    skipped_own: ModelChannel | None = None  # the agent's choice, disabled
    unusable_default: ModelChannel | None = None  # the system default, disabled


def auxiliary_choice(*, agent: Agent) -> AuxiliaryChoice:
    """The agent's enabled auxiliary channel, else the enabled system default, else none."""
    own = agent.auxiliary_model_channel
    if own is not None and own.enabled:
        return AuxiliaryChoice(own, "agent")
    default = default_auxiliary_channel()
    if default is not None and default.enabled:
        return AuxiliaryChoice(default, "default", skipped_own=own)
    return AuxiliaryChoice(None, "none", skipped_own=own, unusable_default=default)


def _usable_as_default(channel: ModelChannel | None) -> bool:
    return channel is not None and channel.enabled and channel.is_auxiliary


def default_auxiliary_set(*, channel: ModelChannel) -> ModelChannel:
    """Make ``channel`` the system default, marking it usable as auxiliary model if it was
    not (so agents may also choose it by name). A disabled channel is refused."""
    if not channel.enabled:
        raise ValidationError(DISABLED_DEFAULT, code="disabled")
    with transaction.atomic():
        if not channel.is_auxiliary:
            channel.is_auxiliary = True
            channel.save(update_fields=["is_auxiliary", "updated_at"])
        dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(channel.pk))
    return channel


def default_auxiliary_settle(*, channel: ModelChannel) -> ModelChannel | None:
    """After ``channel`` was saved: it becomes the default when it is usable (enabled,
    marked auxiliary) and the current default is not (unset, gone, disabled or unmarked);
    when it *was* the default and no longer is usable, the first other usable channel
    takes over, or the entry is removed. Returns the default afterwards."""
    current = default_auxiliary_channel()
    if _usable_as_default(channel):
        if not _usable_as_default(current):
            return default_auxiliary_set(channel=channel)
        return current
    if current is None or current.pk != channel.pk:
        return current
    heir = (
        ModelChannel.objects.filter(enabled=True, is_auxiliary=True)
        .exclude(pk=channel.pk)
        .order_by("id")
        .first()
    )
    if heir is not None:
        return default_auxiliary_set(channel=heir)
    dict_delete(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL)
    return None
