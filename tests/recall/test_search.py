"""search_history and read_history_message over real compacted transcripts, on the
configured database (SQLite by default, PostgreSQL with DATABASE_URL)."""

from __future__ import annotations

import json

import pytest

from agents.models import Message
from agents.services import compaction_apply, message_append, messages_bulk_append
from recall import search
from tests.factories import make_session
from tests.recall.support import (
    CHINESE,
    CHINESE_FACT,
    compacted_transcript,
)
from tests.support.history import apply_compaction

# the real compaction asks for chunk summaries from worker threads (their own connections)
pytestmark = pytest.mark.django_db(transaction=True)


def _ids(session, query, limit=None):
    return [h.id for h in search.search(session=session, query=query, limit=limit)]


def test_a_fact_planted_in_a_compacted_tool_output_is_found_with_its_id(
    llm_server, tmp_path
) -> None:
    planted = compacted_transcript(llm_server, tmp_path)
    for query in (
        "reconciliation job owner",
        "Priya Natarajan",
        "retry budget",
        '"seventeen attempts"',
        "who owns the nightly reconciliation?",  # stemmed and partial: any-term pass
    ):
        hits = search.search(session=planted.session, query=query)
        assert hits, query
        assert hits[0].id == planted.message.pk, (query, hits[:3])
        assert hits[0].role == "tool" and hits[0].time
    best = search.search(session=planted.session, query="Natarajan retry budget")[0]
    assert "Natarajan" in best.snippet and len(best.snippet) <= search.SNIPPET_CHARS + 2
    result = json.loads(search.search_result(session=planted.session, query="Natarajan"))
    assert result["hits"][0]["id"] == planted.message.pk and result["hits"][0]["role"] == "tool"


def test_chinese_queries_find_a_chinese_fact(llm_server, tmp_path) -> None:
    planted = compacted_transcript(
        llm_server, tmp_path, name=CHINESE, fact=CHINESE_FACT, nth_tool=3
    )
    for query in ("回调密钥", "负责人 王小明", "蓝鲸", "电台识别服务的回调", "蓝鲸 配置中心"):
        assert _ids(planted.session, query)[:1] == [planted.message.pk], query
    assert _ids(planted.session, "回调密码") == []  # not the same word


def test_only_compacted_originals_of_the_session_are_searched() -> None:
    session = make_session()
    rows = messages_bulk_append(
        session=session,
        rows=[
            {"role": "user", "content": "the llama ate the artichoke"},
            {"role": "assistant", "content": "the llama is fine"},
            {"role": "user", "content": "visible llama question"},
        ],
    )
    assert _ids(session, "llama") == []  # nothing compacted: all still in the context
    applied = apply_compaction(session, rows[:2], summary="## 目标\nllama summary " + "y" * 300)
    assert _ids(session, "llama") == [rows[1].pk, rows[0].pk]  # newest first on a tie
    assert applied.summary_message.pk not in _ids(session, "summary llama")
    assert _ids(session, "artichoke") == [rows[0].pk]
    note = json.loads(search.search_result(session=session, query="walrus"))
    assert note["hits"] == [] and "no compacted message matches" in note["note"]


def test_a_pruned_tool_output_is_searchable_by_its_original_text() -> None:
    session = make_session()
    call = {"id": "c1", "name": "run_shell", "arguments": '{"cmd": "cat /etc/app/config.toml"}'}
    msgs = [
        message_append(session=session, role="user", content="check the config"),
        message_append(session=session, role="assistant", content="", tool_calls=[call]),
        message_append(
            session=session,
            role="tool",
            content="listen_port = 48213\nupstream = 'kestrel.internal'",
            tool_call_id="c1",
            metadata={"toolName": "run_shell"},
        ),
    ]
    compaction_apply(
        session=session,
        compacted_ids=[],
        pruned_ids=[msgs[2].pk],
        summary_content=None,
        pruned_token_estimate=17,
        event_content="pruned",
        event_payload={},
    )
    hits = search.search(session=session, query="kestrel.internal")
    assert [h.id for h in hits] == [msgs[2].pk] and hits[0].tool == "run_shell"
    assert "48213" in hits[0].snippet
    apply_compaction(session, msgs[:2])
    # the tool call's arguments are searched too, substrings of paths included
    assert _ids(session, "config.toml") == [msgs[1].pk]
    assert _ids(session, "app/config") == [msgs[1].pk]


def test_a_foreign_sessions_messages_never_come_back(llm_server, tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    mine = compacted_transcript(llm_server, tmp_path / "a")
    theirs = compacted_transcript(llm_server, tmp_path / "b")
    assert mine.session.owner_id != theirs.session.owner_id
    foreign = set(Message.objects.filter(session=theirs.session).values_list("pk", flat=True))
    for query in ("Natarajan", "reconciliation", "django", "the", "test", "def", "a"):
        found = _ids(mine.session, query, limit=search.MAX_LIMIT)
        assert not set(found) & foreign, query
    assert _ids(mine.session, "Natarajan") == [mine.message.pk]
    with pytest.raises(search.RecallError, match="no message"):
        search.read(session=mine.session, message_id=theirs.message.pk)


def test_read_history_message_pages_a_long_original() -> None:
    session = make_session()
    text = "".join(f"line {i:05d} of the long log\n" for i in range(1000))  # 27 000 chars
    msg = message_append(session=session, role="tool", content=text, tool_call_id="c9")
    first = search.read(session=session, message_id=msg.pk)
    assert (first.page, first.pages) == (1, 5) and first.text == text[: search.PAGE_CHARS]
    third = json.loads(search.read_result(session=session, message_id=msg.pk, page=3))
    assert third["text"] == text[2 * search.PAGE_CHARS : 3 * search.PAGE_CHARS]
    assert third["next"] == "page 4 of 5" and third["compacted"] is False
    last = search.read(session=session, message_id=msg.pk, page=5)
    assert "".join(
        search.read(session=session, message_id=msg.pk, page=p).text for p in range(1, 6)
    ) == text and last.text.endswith("line 00999 of the long log\n")
    with pytest.raises(search.RecallError, match="5 page"):
        search.read(session=session, message_id=msg.pk, page=6)


def test_a_query_must_have_words() -> None:
    session = make_session()
    with pytest.raises(search.RecallError, match="empty"):
        search.search(session=session, query="  ,, ")
    assert search.query_terms('deploy "exact phrase" deploy, 端口。') == [
        "deploy",
        "exact phrase",
        "端口",
    ]
