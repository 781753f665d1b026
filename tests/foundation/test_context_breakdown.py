"""The context breakdown (issue 17 item 11): system prompt, tool definitions, pins, summary,
messages and free, in the token bar's count — the parts add up to ``usedTokens``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.context_breakdown import context_breakdown, tool_definition_tokens
from agents.meter import (
    context_reading,
    meter_read,
    system_prompt_tokens,
    visible_tokens,
    visible_tokens_of,
)
from agents.models import ChatSession
from agents.selectors import llm_history_load
from agents.services import session_record_usage
from agents.tools.catalog import turn_tool_specs
from compaction.controls import message_pin
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply
from tests.factories import make_agent, make_session
from tests.support.history import conversation, session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db

PARTS = ("systemPrompt", "toolDefinitions", "pins", "summary", "messages")

estimates = st.integers(min_value=0, max_value=2_000_000)


@given(
    st.lists(estimates, min_size=5, max_size=5),
    st.integers(min_value=0, max_value=3_000_000),
    st.integers(min_value=1, max_value=2_000_000),
)
def test_the_parts_add_up_to_the_bars_figure_and_keep_their_shares(
    parts: list[int], used: int, window: int
) -> None:
    system, tools, pins, summary, messages = parts
    found = context_breakdown(
        used_tokens=used,
        max_tokens=window,
        system_prompt=system,
        tool_definitions=tools,
        pins=pins,
        summary=summary,
        messages=messages,
    )
    shown = found.to_json()
    assert sum(shown[k] for k in PARTS) == found.used == used
    assert shown["free"] == max(0, window - used)
    whole = sum(parts)
    for name, estimate in zip(PARTS, parts, strict=True):
        exact = used * estimate / whole if whole else (used if name == "messages" else 0)
        assert abs(shown[name] - exact) < 1  # rounded down, or up by the one token left over


def test_the_tokens_left_over_by_rounding_go_to_the_largest_fractions() -> None:
    found = context_breakdown(
        used_tokens=10,
        max_tokens=100,
        system_prompt=1,
        tool_definitions=1,
        pins=1,
        summary=0,
        messages=0,
    )
    # 10/3 each: 3, 3, 3 and the one token left goes to the first on the tie
    assert (found.system_prompt, found.tool_definitions, found.pins) == (4, 3, 3)
    assert found.free == 90


def _parts(session: ChatSession) -> dict[str, int]:
    session.refresh_from_db()
    reading = context_reading(session=session)
    assert reading.breakdown is not None
    assert sum(reading.breakdown[k] for k in PARTS) == reading.used_tokens
    assert reading.breakdown["free"] == max(0, reading.max_tokens - reading.used_tokens)
    return reading.breakdown


def test_tool_definitions_are_the_tools_the_turn_sends() -> None:
    with_recall = make_session()
    without = make_session(agent=make_agent(search_history_enabled=False))
    specs = turn_tool_specs(with_recall)
    assert {"read_file", "todo_write", "search_history", "context_status"} <= {
        s.name for s in specs
    }
    assert "search_history" not in {s.name for s in turn_tool_specs(without)}
    assert tool_definition_tokens(specs) > tool_definition_tokens(turn_tool_specs(without)) > 0


def test_the_breakdown_adds_up_estimated_reported_and_without_tools() -> None:
    session = make_session()
    rows = conversation(session, 10)
    estimated = _parts(session)
    assert estimated["messages"] > estimated["systemPrompt"] > 0
    assert estimated["pins"] == estimated["summary"] == 0
    session_record_usage(
        session=session, input_tokens=4_321, output_tokens=9, input_position=rows[-1].position
    )
    reported = _parts(session)
    assert sum(reported[k] for k in PARTS) == 4_321
    assert meter_read(session=session).breakdown is None  # without the tools: not known


def test_a_pin_moves_tokens_from_messages_to_pins() -> None:
    session = make_session()
    rows = conversation(session, 10)
    session_record_usage(
        session=session, input_tokens=5_000, output_tokens=9, input_position=rows[-1].position
    )
    before = _parts(session)
    message_pin(session=session, message_id=rows[3].pk, pinned=True)
    after = _parts(session)
    assert before["pins"] == 0 < after["pins"]
    assert after["pins"] + after["messages"] == before["messages"]
    assert (after["systemPrompt"], after["toolDefinitions"]) == (
        before["systemPrompt"],
        before["toolDefinitions"],
    )
    # the aggregate and the rows a turn loads agree on the tally
    assert visible_tokens(session) == visible_tokens_of(session, llm_history_load(session=session))


def test_a_compaction_moves_tokens_to_the_summary(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    before = _parts(session)
    assert before["summary"] == 0
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert outcome.status == "done"
    after = _parts(session)
    assert after["summary"] > 0
    assert after["messages"] < before["messages"]
    assert sum(after[k] for k in PARTS) == outcome.tokens_after  # one counter (item 10)
    visible = visible_tokens(session)
    assert visible.summary > 0 and visible.pins == 0
    assert system_prompt_tokens(session.agent.system_prompt) > 0
