"""Configuration writes: model channels and agents, for the pages and the REST API alike.

Keyword-only and typed; they take validated values and know nothing about HTTP.
The API key is write-only: a blank value keeps the stored key, and it is never
returned by anything here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError
from django.utils.translation import gettext_lazy as _

from agents.auxiliary import default_auxiliary_settle
from agents.models import Agent, ChatSession, ModelChannel
from agents.services import session_delete

CHANNEL_FIELDS = (
    "name",
    "provider",
    "base_url",
    "model",
    "context_window",
    "is_auxiliary",
    "enabled",
    "input_price_per_million",
    "output_price_per_million",
)
AGENT_FIELDS = (
    "name",
    "system_prompt",
    "model_channel",
    "auxiliary_model_channel",
    "compaction_strategy",
    "compaction_threshold_percent",
    "compaction_protect_first_n",
    "compaction_target_percent",
    "compaction_reground",
    "search_history_enabled",
    "compaction_notes",  # issue 18 item 5
    "compaction_mode",  # issue 17 (CONTRACT §7)
    "compaction_instructions",
    "compaction_token_cap",
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


@dataclass(frozen=True, slots=True)
class AgentUse:
    """The chats that keep an agent (a chat's agent is PROTECTed), and how many of them are
    ``user``'s own."""

    chats: int
    own: int

    @property
    def others(self) -> int:
        return self.chats - self.own


class AgentInUse(Exception):
    """The agent still has chats that this deletion may not remove."""

    def __init__(self, use: AgentUse) -> None:
        super().__init__(f"the agent has {use.chats} chats")
        self.use = use


def agent_use(*, agent: Agent, user: Any) -> AgentUse:
    chats = ChatSession.objects.filter(agent=agent)
    return AgentUse(chats=chats.count(), own=chats.filter(owner_id=user.pk).count())


def agent_delete(*, agent: Agent, user: Any, with_chats: bool = False) -> int:
    """Delete the agent. Its chats keep it (PROTECT): with ``with_chats`` the user's own
    chats go first, with their messages and workspaces; anyone else's chat, or any chat
    without ``with_chats``, refuses the deletion (AgentInUse) and nothing changes.
    Returns the number of chats deleted."""
    with transaction.atomic():
        use = agent_use(agent=agent, user=user)
        if use.chats and (not with_chats or use.others):
            raise AgentInUse(use)
        chats = list(ChatSession.objects.filter(agent=agent, owner_id=user.pk))
        for chat in chats:
            session_delete(session=chat)
        try:
            with transaction.atomic():
                agent.delete()
        except ProtectedError:  # a chat was started meanwhile
            raise AgentInUse(agent_use(agent=agent, user=user)) from None
    return len(chats)


def channel_create(*, api_key: str = "", **fields: Any) -> ModelChannel:
    """A new channel; the first one marked auxiliary becomes the system default."""
    values = {k: v for k, v in fields.items() if k in CHANNEL_FIELDS}
    channel = ModelChannel(api_key=(api_key or "").strip(), **values)
    channel.full_clean()
    with transaction.atomic():
        channel.save()
        default_auxiliary_settle(channel=channel)
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
    never lead its stored key to a host of their choosing. The system default auxiliary
    model follows the change (``agents.auxiliary.default_auxiliary_settle``)."""
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
    with transaction.atomic():
        channel.save()
        default_auxiliary_settle(channel=channel)
    return channel
