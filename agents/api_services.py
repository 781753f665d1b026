"""Writes behind the REST API's configuration endpoints: agents, model channels, dictionary.

Keyword-only, typed, named ``<entity>_<action>`` like ``agents.services``; they take
already-validated values (the serializers validate) and know nothing about HTTP.
Session and message writes live in ``agents.services``, channel and agent settings in
``agents.configuration`` (shared with the configuration pages); this module only adds
what the API needs beyond them: creating and sharing agents, and dictionary entries.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents import configuration
from agents.models import Agent
from netaclaw.models import DictInfo, DictType


def agent_create(*, creator: Any, shared: bool = False, **fields: Any) -> Agent:
    """A new agent owned by ``creator``, or shared with everyone (no owner)."""
    values = {k: v for k, v in fields.items() if k in configuration.AGENT_FIELDS}
    agent = Agent(owner=None if shared else creator, **values)
    agent.full_clean()
    agent.save()
    return agent


def agent_update(*, agent: Agent, editor: Any, shared: bool | None = None, **fields: Any) -> Agent:
    """``configuration.agent_update``, plus sharing: ``shared`` True drops the owner,
    False gives an unowned agent to ``editor``."""
    if shared is True:
        agent.owner = None
    elif shared is False and agent.owner_id is None:
        agent.owner = editor
    return configuration.agent_update(agent=agent, **fields)


def _dict_type(key: str) -> DictType:
    dict_type, _ = DictType.objects.get_or_create(key=key, defaults={"name": key})
    return dict_type


def dict_entry_create(*, type_key: str, name: str, value: str = "", remark: str = "") -> DictInfo:
    """A new entry; its type is created on first use (as ``netaclaw.dictionary.dict_set`` does)."""
    with transaction.atomic():
        return DictInfo.objects.create(
            type=_dict_type(type_key), name=name, value=value, remark=remark
        )


def dict_entry_update(
    *,
    entry: DictInfo,
    type_key: str | None = None,
    name: str | None = None,
    value: str | None = None,
    remark: str | None = None,
) -> DictInfo:
    with transaction.atomic():
        if type_key is not None and type_key != entry.type.key:
            entry.type = _dict_type(type_key)
        if name is not None:
            entry.name = name
        if value is not None:
            entry.value = value
        if remark is not None:
            entry.remark = remark
        entry.save()
    return entry
