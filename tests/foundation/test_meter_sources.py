"""The meter reads the same figures from an aggregate query or from loaded history.

A chat turn loads the visible history anyway and computes the meter from those rows
instead of a second query; the two must agree in every state a session can be in.
"""

from __future__ import annotations

import pytest
from django.db.models import F

from agents.meter import (
    TurnTally,
    meter_read,
    system_prompt_tokens,
    visible_tokens,
    visible_tokens_of,
)
from agents.models import ChatSession
from agents.selectors import llm_history_load
from agents.services import message_append, session_record_usage
from tests.factories import make_session
from tests.foundation.test_history import _apply, _conversation

pytestmark = pytest.mark.django_db


def _both(session: ChatSession):  # type: ignore[no-untyped-def]
    session.refresh_from_db()
    queried = visible_tokens(session)
    loaded = visible_tokens_of(session, llm_history_load(session=session))
    assert meter_read(session=session) == meter_read(session=session, visible=loaded)
    return queried, loaded


def test_aggregate_and_loaded_rows_agree_through_a_sessions_life() -> None:
    session = make_session()
    msgs = _conversation(session, 8)
    call = message_append(
        session=session,
        role="assistant",
        content="",
        tool_calls=[{"id": "c1", "name": "read_file", "arguments": "{}"}],
    )
    tool = message_append(session=session, role="tool", content="z" * 400, tool_call_id="c1")
    queried, loaded = _both(session)
    assert queried == loaded
    assert queried.tools == tool.token_estimate > 0
    assert queried.since_report == queried.total  # nothing reported: all of it is estimated

    session_record_usage(
        session=session, input_tokens=900, output_tokens=20, input_position=call.position
    )
    after = message_append(session=session, role="user", content="and then? " + "w" * 80)
    queried, loaded = _both(session)
    assert queried == loaded
    assert queried.since_report == tool.token_estimate + after.token_estimate
    assert meter_read(session=session).used_tokens == 900 + queried.since_report

    _apply(session, msgs[2:6], pruned=[tool])  # summary in, span out, an event record
    queried, loaded = _both(session)
    assert queried == loaded
    assert queried.total < sum(m.token_estimate for m in [*msgs, call, tool, after])
    # the report described the old context: the meter is all estimate again
    prompt = system_prompt_tokens(session.agent.system_prompt)
    assert meter_read(session=session).used_tokens == prompt + queried.total


def _answer(session: ChatSession, content: str, *, calls=(), inp: int = 700):  # type: ignore[no-untyped-def]
    return message_append(
        session=session,
        role="assistant",
        content=content,
        tool_calls=list(calls),
        input_tokens=inp,
        output_tokens=12,
        record_usage=True,
    )


def test_turn_tally_gives_the_aggregates_figures_after_every_answer_of_a_tool_turn() -> None:
    session = make_session()
    _conversation(session, 5)
    tally = TurnTally.at_read(session, llm_history_load(session=session))
    call = {"id": "c1", "name": "read_file", "arguments": '{"path": "a.py"}'}
    first = _answer(session, "", calls=[call])
    after_first = tally.after_answer(session, first)
    assert after_first == visible_tokens(session)
    assert after_first.since_report == first.token_estimate
    tool = message_append(session=session, role="tool", content="q" * 900, tool_call_id="c1")
    tally.add(tool)
    final = _answer(session, "done " + "d" * 60, inp=1200)
    after_final = tally.after_answer(session, final)
    assert after_final == visible_tokens(session)
    assert after_final.tools == tool.token_estimate > 0
    # the reading the turn sends equals the one the aggregate gives
    assert meter_read(session=session, visible=after_final) == meter_read(session=session)
    assert meter_read(session=session).used_tokens == 1200 + final.token_estimate


def test_turn_tally_declines_when_another_writer_stored_a_row_meanwhile() -> None:
    session = make_session()
    _conversation(session, 3)
    tally = TurnTally.at_read(session, llm_history_load(session=session))
    elsewhere = ChatSession.objects.get(pk=session.pk)  # another process's runner
    message_append(session=elsewhere, role="user", content="from another tab " + "t" * 90)
    answer = _answer(session, "ok")
    assert tally.after_answer(session, answer) is None
    # what the turn falls back to counts the other writer's row
    assert visible_tokens(session).since_report == answer.token_estimate


def test_turn_tally_declines_after_a_compaction_was_written_back() -> None:
    session = make_session()
    msgs = _conversation(session, 8)
    tally = TurnTally.at_read(session, llm_history_load(session=session))
    _apply(ChatSession.objects.get(pk=session.pk), msgs[1:5])
    answer = _answer(session, "ok")
    assert session.compaction_count == 1  # returned by the answer's own statement
    assert tally.after_answer(session, answer) is None
    assert visible_tokens(session) != tally.visible


def test_turn_tally_checks_the_compaction_count_itself() -> None:
    """A write-back that took no position is still seen: by the count."""
    session = make_session()
    _conversation(session, 4)
    tally = TurnTally.at_read(session, llm_history_load(session=session))
    ChatSession.objects.filter(pk=session.pk).update(compaction_count=F("compaction_count") + 1)
    assert tally.after_answer(session, _answer(session, "ok")) is None
