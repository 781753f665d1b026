"""Configuration writes: model channels and agents, for the pages and the REST API alike.

Keyword-only and typed; they take validated values and know nothing about HTTP.
The API key is write-only: a blank value keeps the stored key, and it is never
returned by anything here.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from agents.models import Agent, ModelChannel
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_value

CHANNEL_FIELDS = (
    "name",
    "provider",
    "base_url",
    "model",
    "context_window",
    "is_auxiliary",
    "enabled",
)
AGENT_FIELDS = (
    "name",
    "system_prompt",
    "model_channel",
    "auxiliary_model_channel",
    "compaction_strategy",
    "compaction_threshold_percent",
    "compaction_protect_first_n",
    "compaction_reground",
    "search_history_enabled",
)


def agent_editable(*, user: Any, agent: Agent) -> bool:
    """Staff edit every agent; other users only their own (a shared agent is staff's)."""
    if not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff) or (agent.owner_id is not None and agent.owner_id == user.pk)


def agent_create(*, creator: Any, shared: bool = False, **fields: Any) -> Agent:
    """A new agent owned by ``creator``, or shared with everyone (no owner)."""
    values = {k: v for k, v in fields.items() if k in AGENT_FIELDS}
    agent = Agent(owner=None if shared else creator, **values)
    agent.full_clean()
    agent.save()
    return agent


def agent_update(
    *, agent: Agent, editor: Any = None, shared: bool | None = None, **fields: Any
) -> Agent:
    """Change the given settings (unknown names are ignored) and save. ``shared`` True
    drops the owner, False gives an unowned agent to ``editor``."""
    if shared is True:
        agent.owner = None
    elif shared is False and agent.owner_id is None:
        agent.owner = editor
    changed = [name for name in fields if name in AGENT_FIELDS]
    for name in changed:
        setattr(agent, name, fields[name])
    agent.full_clean()
    agent.save()
    return agent


def channel_create(*, api_key: str = "", **fields: Any) -> ModelChannel:
    values = {k: v for k, v in fields.items() if k in CHANNEL_FIELDS}
    channel = ModelChannel(api_key=(api_key or "").strip(), **values)
    channel.full_clean()
    channel.save()
    return channel


# Where a channel's key is sent: changing either needs the key entered again.
KEY_DESTINATION_FIELDS = ("provider", "base_url")
KEY_REENTRY_MESSAGE = _(
    "The provider or base URL changed: enter the API key again (or remove the stored key). "
    "A stored key is never sent to a new address."
)


def key_reentry_required(
    *, channel: ModelChannel, fields: dict[str, Any], api_key: str | None, clear_api_key: bool
) -> bool:
    """The change moves a stored key to another provider or address without a new key."""
    if not channel.pk or not channel.api_key or clear_api_key or (api_key or "").strip():
        return False
    return any(
        name in fields and (fields[name] or "") != (getattr(channel, name) or "")
        for name in KEY_DESTINATION_FIELDS
    )


def channel_update(
    *, channel: ModelChannel, api_key: str | None = None, clear_api_key: bool = False, **fields: Any
) -> ModelChannel:
    """Change the given fields; a blank or absent ``api_key`` keeps the stored key — unless
    the provider or the base URL changes: then a new key (or ``clear_api_key``) is required,
    or nothing is saved (ValidationError on ``api_key``), so whoever may edit a channel can
    never lead its stored key to a host of their choosing."""
    if key_reentry_required(
        channel=channel, fields=fields, api_key=api_key, clear_api_key=clear_api_key
    ):
        raise ValidationError({"api_key": [KEY_REENTRY_MESSAGE]}, code="key_reentry")
    for name, value in fields.items():
        if name in CHANNEL_FIELDS:
            setattr(channel, name, value)
    if clear_api_key:
        channel.api_key = ""
    elif api_key and api_key.strip():
        channel.api_key = api_key.strip()
    channel.full_clean()
    channel.save()
    return channel


def default_auxiliary_channel() -> ModelChannel | None:
    """The system default auxiliary channel (dictionary ``netaclaw.default_auxiliary_channel_id``)."""
    raw = dict_value(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL)
    try:
        return ModelChannel.objects.filter(pk=int(raw or "")).first()
    except ValueError:
        return None
