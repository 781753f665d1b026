"""The history endpoints' memory policy lives in its own module (``web.history_memory``;
issue 23): one full collection once every ``HISTORY_CHARS_PER_COLLECTION`` characters
served. ``test_message_pages_memory.py`` measures what it does to a real server.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agents.models import Role
from agents.services import messages_bulk_append
from tests.factories import make_session
from web import history_memory
from web.api import MESSAGES_PAGE_CHARS
from web.history_memory import HISTORY_CHARS_PER_COLLECTION, GarbageBudget


@pytest.fixture
def full_collections() -> Iterator[list[int]]:
    """The full collections that run meanwhile (automatic ones held off)."""
    seen: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(2)

    enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(watch)
    try:
        yield seen
    finally:
        gc.callbacks.remove(watch)
        if enabled:
            gc.enable()


def test_a_full_collection_runs_each_time_the_budget_is_spent(full_collections) -> None:
    budget = GarbageBudget(100)
    assert budget.spend(60) is False
    assert full_collections == []
    assert budget.spend(40) is True
    assert full_collections == [2]
    assert budget.spend(99) is False
    assert budget.spend(150) is True
    assert full_collections == [2, 2]


def test_the_budget_is_four_of_the_largest_pages() -> None:
    assert HISTORY_CHARS_PER_COLLECTION == 4 * MESSAGES_PAGE_CHARS == 8_000_000


@pytest.mark.django_db
def test_the_history_endpoints_spend_the_text_they_serve(alice, alice_api, monkeypatch) -> None:
    budget = GarbageBudget(10**12)
    monkeypatch.setattr(history_memory, "_history", budget)
    session = make_session(owner=alice)
    rows = [{"role": Role.USER, "content": "x" * 1000}, {"role": Role.ASSISTANT, "content": "yy"}]
    first, _ = messages_bulk_append(session=session, rows=rows)
    assert alice_api.get(f"/api/sessions/{session.pk}/messages/").status_code == 200
    assert budget.pending == 1002
    assert alice_api.get(f"/api/sessions/{session.pk}/messages/{first.pk}/").status_code == 200
    assert budget.pending == 2002
