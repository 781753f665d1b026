"""The meter reads the same figures from an aggregate query or from loaded history.

A chat turn loads the visible history anyway and computes the meter from those rows
instead of a second query; the two must agree in every state a session can be in.
"""

from __future__ import annotations

import pytest

from agents.meter import (
    meter_read,
    system_prompt_tokens,
    visible_tokens,
    visible_tokens_of,
)
from agents.models import ChatSession
from agents.selectors import llm_history_load
from agents.services import message_append, session_record_usage
from tests.factories import make_session
from tests.support.history import apply_compaction, conversation

pytestmark = pytest.mark.django_db


def _both(session: ChatSession):  # type: ignore[no-untyped-def]
    session.refresh_from_db()
    queried = visible_tokens(session)
    loaded = visible_tokens_of(session, llm_history_load(session=session))
    assert meter_read(session=session) == meter_read(session=session, visible=loaded)
    return queried, loaded


def test_aggregate_and_loaded_rows_agree_through_a_sessions_life() -> None:
    session = make_session()
    msgs = conversation(session, 8)
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

    apply_compaction(session, msgs[2:6], pruned=[tool])  # summary in, span out, an event record
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
