"""The recall benchmark's own machinery (its run is ``python -m bench.recall_search``)."""

from __future__ import annotations

from collections import Counter

from bench import recall_search


def test_the_corpus_is_reproducible_agent_shaped_and_mixed() -> None:
    rows = recall_search.corpus(3, 900)
    assert rows == recall_search.corpus(3, 900) and len(rows) == 900
    assert Counter(r["role"] for r in rows) == {"user": 300, "assistant": 300, "tool": 300}
    assert all(r["tool_calls"] for r in rows if r["role"] == "assistant")
    assert any(not r["content"].isascii() for r in rows if r["role"] == "user"), "Chinese"
    sizes = [len(r["content"]) for r in rows if r["role"] == "tool"]
    assert min(sizes) < 300 and 2_000 < max(sizes) <= 4_000


def test_planted_facts_sit_in_compacted_tool_outputs() -> None:
    rows = recall_search.corpus(1, 600)
    facts = recall_search.plant(rows, 1)
    assert len(facts) == recall_search.FACTS
    for query, index in facts:
        assert rows[index]["role"] == "tool" and index < 600 - recall_search.TAIL
        assert all(word in rows[index]["content"] for word in query.split())


def test_the_section_reports_both_databases_against_the_target() -> None:
    figures = {"p50": 1.0, "p99": 2.0, "max": 3.0}
    result = {
        "messages": 100_000,
        "load_seconds": 60.0,
        "rows": {label: figures for label, _ in recall_search.QUERIES},
        "all": figures,
        "cpu": figures,
        "queries": 432,
        "facts_first": 48,
        "facts": 48,
    }
    text = recall_search.render(
        [{**result, "vendor": "sqlite"}, {**result, "vendor": "postgresql"}], "cmd"
    )
    assert text.startswith(recall_search.HEADING + "\n")
    assert "| SQLite p50 / p99 (ms) | PostgreSQL p50 / p99 (ms) |" in text
    assert text.count("target p99 under 50 ms met") == 2
