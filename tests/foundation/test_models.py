from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from agents.models import Agent, Message
from tests.factories import make_agent, make_channel, make_session

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("field", "value", "ok"),
    [
        ("compaction_threshold_percent", 30, True),
        ("compaction_threshold_percent", 95, True),
        ("compaction_threshold_percent", 29, False),
        ("compaction_threshold_percent", 96, False),
        ("compaction_protect_first_n", 1, True),
        ("compaction_protect_first_n", 10, True),
        ("compaction_protect_first_n", 0, False),
        ("compaction_protect_first_n", 11, False),
        ("compaction_strategy", "lossless", False),
    ],
)
def test_agent_range_constraints_live_in_the_database(field: str, value: object, ok: bool) -> None:
    def create() -> Agent:
        with transaction.atomic():
            return make_agent(**{field: value})

    if ok:
        assert getattr(create(), field) == value
    else:
        with pytest.raises(IntegrityError):
            create()


def test_agent_defaults_follow_the_seed() -> None:
    agent = make_agent()
    assert (agent.compaction_threshold_percent, agent.compaction_protect_first_n) == (70, 3)
    assert agent.compaction_strategy == "lossy"
    assert agent.auxiliary_model_channel is None


def test_message_role_is_constrained() -> None:
    session = make_session()
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(session=session, position=1, role="robot")


def test_openai_compatible_channel_needs_a_base_url() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_channel(provider="openai_compatible", base_url="")
    assert make_channel(provider="anthropic", base_url="").pk


def test_channel_repr_and_str_never_show_the_key() -> None:
    channel = make_channel(api_key="sk-very-secret-123")
    assert "sk-very-secret-123" not in repr(channel)
    assert "sk-very-secret-123" not in str(channel)


def test_the_netaclaw_dictionary_type_exists_after_migrate() -> None:
    from system.models import DictType

    assert DictType.objects.get(key="netaclaw").name == "NetaClaw配置"
