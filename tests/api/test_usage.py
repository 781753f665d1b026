"""Usage over REST (issue 25 item 8; CONTRACT §8): a chat's model calls and its compactions'
auxiliary requests, their total, and a cost where the channels used have prices."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from agents.models import ChatSession, CompactionRecord
from tests.factories import make_agent, make_channel, make_session

pytestmark = pytest.mark.django_db


def _used(owner, *, priced: bool) -> ChatSession:
    prices = (
        {"input_price_per_million": Decimal("3"), "output_price_per_million": Decimal("15")}
        if priced
        else {}
    )
    main = make_channel(name=f"main-{priced}", **prices)
    aux = make_channel(
        name=f"aux-{priced}",
        is_auxiliary=True,
        **({"input_price_per_million": Decimal("1")} if priced else {}),
    )
    session = make_session(
        owner=owner, agent=make_agent(model_channel=main, auxiliary_model_channel=aux, owner=owner)
    )
    ChatSession.objects.filter(pk=session.pk).update(
        total_input_tokens=1_000_000, total_output_tokens=200_000, api_calls=7
    )
    for tokens_in, tokens_out, requests, status in [
        (400_000, 20_000, 3, "done"),
        (100_000, None, 1, "failed"),  # billed although it failed
    ]:
        CompactionRecord.objects.create(
            session=session,
            trigger="auto",
            status=status,
            auxiliary_channel=aux.name,
            aux_input_tokens=tokens_in,
            aux_output_tokens=tokens_out,
            request_count=requests,
            started_at=timezone.now(),
        )
    return session


def test_a_chats_usage_splits_chat_and_compaction_and_totals_them(alice, alice_api) -> None:
    session = _used(alice, priced=False)
    body = alice_api.get(f"/api/sessions/{session.pk}/usage/").json()
    assert body == {
        "chat": {"inputTokens": 1_000_000, "outputTokens": 200_000, "apiCalls": 7},
        "compaction": {"inputTokens": 500_000, "outputTokens": 20_000, "requests": 4},
        "total": {"inputTokens": 1_500_000, "outputTokens": 220_000},
    }


def test_a_cost_is_given_where_the_channels_have_prices(alice, alice_api) -> None:
    session = _used(alice, priced=True)
    total = alice_api.get(f"/api/sessions/{session.pk}/usage/").json()["total"]
    # chat 1M × 3 + 0.2M × 15 = 6; compaction 0.5M × 1 (no output price) = 0.5
    assert total["cost"] == "6.5000"


def test_the_callers_usage_sums_their_chats_only(alice, alice_api, bob) -> None:
    _used(alice, priced=False)
    _used(alice, priced=True)
    _used(bob, priced=False)
    body = alice_api.get("/api/usage/").json()
    assert body["chat"] == {"inputTokens": 2_000_000, "outputTokens": 400_000, "apiCalls": 14}
    assert body["compaction"]["requests"] == 8
    assert body["total"]["cost"] == "6.5000"


def test_another_users_chat_usage_is_not_found(alice, bob_api) -> None:
    session = _used(alice, priced=False)
    assert bob_api.get(f"/api/sessions/{session.pk}/usage/").status_code == 404
