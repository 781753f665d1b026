"""Issue 25 through the service: a pruned output reads as its stub (tool, id, where the
original is) and is counted as that stub; a compaction records where it should have
landed and whether it did; one that could not better the summary in place resets the
chain depth, so later ones do not re-read every original; and the agent's target is
validated like its threshold."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

import condense as core
from agents.models import ChatSession, CompactionRecord, Message, Role
from agents.services import messages_bulk_append
from compaction.context import llm_context_for_session
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import apply_compaction
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db


def _session_with_tool_outputs(llm_server, *, recall: bool, outputs: int = 8) -> ChatSession:
    """An 8k-window agent whose history is mostly old ``read_file`` outputs: pruning them
    alone brings the view under the target, so a compaction is pruned-only."""
    channel = make_channel(
        base_url=llm_server.openai_base_url, context_window=8000, is_auxiliary=True
    )
    agent = make_agent(
        model_channel=channel, auxiliary_model_channel=channel, search_history_enabled=recall
    )
    session = make_session(owner=make_user(), agent=agent)
    rows: list[dict] = [
        {"role": "user", "content": "修一下解析器"},
        {"role": "assistant", "content": "好的，先看文件。"},
        {"role": "user", "content": "先读 src 目录"},
    ]
    for i in range(outputs):
        call = {"id": f"call_{i}", "name": "read_file", "arguments": f'{{"path": "f{i}.py"}}'}
        rows += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {
                "role": "tool",
                "content": f"# f{i}.py\n" + "x = 1\n" * 500,
                "tool_call_id": f"call_{i}",
                "metadata": {"toolName": "read_file", "isError": False},
            },
        ]
    rows += [{"role": "assistant", "content": "都读完了。"}, {"role": "user", "content": "继续"}]
    messages_bulk_append(session=session, rows=rows)
    return session


@pytest.mark.parametrize("recall", [True, False])
def test_a_pruned_output_reads_and_counts_as_its_stub(llm_server, recall: bool) -> None:
    session = _session_with_tool_outputs(llm_server, recall=recall)

    outcome = compact(CompactionRequest(str(session.pk), reason="auto"))

    assert outcome.status == "done" and outcome.summary_message_id is None, outcome
    assert llm_server.requests == [], "pruning alone reached the target: no model call"
    pruned = list(Message.objects.filter(session=session, pruned_at__isnull=False))
    assert pruned and all(m.role == Role.TOOL for m in pruned)
    context = {m.id: m for m in llm_context_for_session(session)}
    for row in pruned:
        stub = context[row.pk].content
        assert stub.startswith(core.PRUNED_TOOL_PLACEHOLDER) and f"read_file #{row.pk}" in stub
        assert ("read_history_message" in stub) is recall
        assert row.token_estimate == core.estimate_tokens(context[row.pk]), "counted as shown"
    record = CompactionRecord.objects.get(pk=outcome.record_id)
    assert record.target_tokens and record.reached_target is True
    assert outcome.tokens_after <= record.target_tokens
    assert record.discarded_requests == 0


def test_a_compaction_that_only_prunes_resets_the_chain_depth(llm_server) -> None:
    session = _session_with_tool_outputs(llm_server, recall=False, outputs=10)
    first = list(Message.objects.filter(session=session).order_by("position")[3:5])
    applied = apply_compaction(session, first, summary="## 目标\n修解析器")
    summary = applied.summary_message
    assert summary is not None
    summary.metadata = {**summary.metadata, "chainDepth": 3}
    summary.save(update_fields=["metadata"])

    outcome = compact(CompactionRequest(str(session.pk), reason="auto"))

    assert outcome.status == "done" and outcome.summary_message_id is None, outcome
    summary.refresh_from_db()
    assert summary.metadata["chainDepth"] == 1, "the summary in place counts as grounded"


def test_a_summary_records_its_target_and_whether_it_landed_under_it(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    channel = make_channel(
        base_url=llm_server.openai_base_url, context_window=20_000, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=make_user(), agent=agent)
    rows = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "z" * 1500}
        for i in range(40)
    ]
    messages_bulk_append(session=session, rows=rows)

    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))

    assert outcome.status == "done" and outcome.summary_message_id is not None, outcome
    record = CompactionRecord.objects.get(pk=outcome.record_id)
    # 60% (the default target) of the 70% threshold of 20k, in the estimator's tokens
    assert record.target_tokens == pytest.approx(20_000 * 0.70 * 0.60, rel=0.05)
    assert record.reached_target is (outcome.tokens_after <= record.target_tokens)
    assert record.reached_target is True


@pytest.mark.parametrize("percent", [19, 91])
def test_the_target_outside_20_to_90_is_refused(percent: int) -> None:
    agent = make_agent()
    agent.compaction_target_percent = percent
    with pytest.raises(ValidationError) as caught:
        agent.full_clean()
    assert "compaction_target_percent" in caught.value.message_dict
