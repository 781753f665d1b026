"""Issue 17, item 7: "What did this compaction drop?" — the numbers, file paths, URLs and
identifiers of the summarized originals that are in neither the summary nor the kept
context, each with the first original it occurs in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from condense import (
    COMPACTED,
    CompactionPolicy,
    DroppedFact,
    Message,
    ToolCall,
    compress,
    context_text,
    dropped_facts,
)

REPORT = Message(
    "user",
    "The parser in src/app/parser.py fails at line 1423 with ERR_EMPTY_LINE; see "
    "https://example.com/issue/77?a=b. Timeout 30s, retry 3 times, since 2024-01-15 at "
    "12:30. 等待45秒 then call parseConfig() with user_id=9912 on 1,000,000 rows (75%).",
    id=5,
)


def test_each_kind_is_found_in_order_of_first_occurrence() -> None:
    found = dropped_facts([REPORT], kept_text="")
    assert [(f.kind, f.value) for f in found] == [
        ("path", "src/app/parser.py"),
        ("number", "1423"),
        ("identifier", "ERR_EMPTY_LINE"),
        ("url", "https://example.com/issue/77?a=b"),
        ("number", "30s"),
        ("number", "2024-01-15"),
        ("number", "12:30"),
        ("number", "45"),
        ("identifier", "parseConfig"),
        ("identifier", "user_id"),
        ("number", "9912"),
        ("number", "1,000,000"),
        ("number", "75%"),
    ]
    assert all(f.message_id == 5 for f in found)
    assert all(isinstance(f, DroppedFact) for f in found)


def test_what_the_kept_text_holds_is_not_dropped() -> None:
    kept = "Summary: src/app/parser.py fails at 1423 (ERR_EMPTY_LINE); see parseConfig."
    values = [f.value for f in dropped_facts([REPORT], kept_text=kept)]
    assert "src/app/parser.py" not in values and "1423" not in values
    assert "ERR_EMPTY_LINE" not in values and "parseConfig" not in values
    assert "9912" in values
    # inside a longer word still counts as kept: the list never claims a readable fact lost
    assert "9912" not in [f.value for f in dropped_facts([REPORT], kept_text="id 99123")]


def test_trivial_numbers_are_skipped_and_plain_words_are_no_facts() -> None:
    message = Message("user", "Do steps 1, 2 and 3, then 7 more; Hello World, HTTP is fine.", id=1)
    assert dropped_facts([message], kept_text="") == []


def test_tool_call_arguments_and_results_count_with_their_message() -> None:
    originals = [
        Message("user", "Read it.", id=10),
        Message(
            "assistant",
            "",
            (ToolCall("c1", "read_file", '{"path": "docs/setup.md", "offset": 4096}'),),
            id=11,
        ),
        Message("tool", "token = 7f3a9c2e1b; port 8443", tool_call_id="c1", id=12),
        Message("user", "Again docs/setup.md, port 8443 and 5173.", id=13),
    ]
    found = dropped_facts(originals, kept_text="")
    assert [(f.value, f.message_id) for f in found] == [
        ("docs/setup.md", 11),
        ("4096", 11),
        ("7f3a9c2e1b", 12),
        ("8443", 12),
        ("5173", 13),
    ], "each value once, with the first original it occurs in"


def test_the_limit_and_determinism() -> None:
    originals = [Message("user", f"order {1000 + i} shipped", id=i) for i in range(50)]
    found = dropped_facts(originals, kept_text="", limit=10)
    assert [f.value for f in found] == [str(1000 + i) for i in range(10)]
    assert found == dropped_facts(originals, kept_text="", limit=10)
    everything = dropped_facts(originals, kept_text="")
    assert len(everything) == 50
    assert dropped_facts(originals, kept_text="", max_chars=40) == everything[:3], (
        "the scan stops after max_chars of originals (whole messages)"
    )


def test_after_a_compaction_the_summary_and_the_kept_messages_hold_what_they_say() -> None:
    messages = [Message("system", "You are a coding agent.", id=1)]
    for t in range(40):
        messages += [
            Message("user", f"Turn {t}: look at ticket TKT_{5000 + t} " + "u" * 600, id=2 + 2 * t),
            Message("assistant", f"Done with build {9000 + t}. " + "a" * 600, id=3 + 2 * t),
        ]
    policy = CompactionPolicy(context_window=16_000)

    def summarize(request: object) -> str:  # remembers only the first ticket
        return "## Goal\nWork through the tickets, starting with TKT_5000.\n" + "- detail\n" * 30

    result = compress(messages, policy, summarize, force=True)
    assert result.status == COMPACTED
    summarized = [m for m in messages if m.id in set(result.summarized_ids)]
    found = dropped_facts(summarized, context_text(result.messages))
    values = {f.value for f in found}
    assert "TKT_5000" not in values, "the summary kept it"
    assert "TKT_5001" in values and "9001" in values
    for anchor in result.anchored_ids:  # user messages kept verbatim are not lost
        kept_ticket = f"TKT_{5000 + (anchor - 2) // 2}"
        assert kept_ticket not in values
    by_value = {f.value: f.message_id for f in found}
    assert by_value["TKT_5001"] == 4 and by_value["9001"] == 5


WORDS = st.sampled_from(
    (
        "run",
        "the",
        "42",
        "7",
        "3.14",
        "user_id",
        "parseConfig",
        "ERR_9",
        "src/app.py",
        "app.py",
        "https://x.io/a?b=1",
        "2024-01-15",
        "解析器30秒",
        "v1.2.3",
        "a=17",
        "(1234)",
        "x,",
        "--flag=99",
    )
)
TEXTS = st.lists(WORDS, max_size=12).map(" ".join)
MESSAGES = st.lists(
    st.builds(
        lambda text, args, role: Message(
            role,
            text,
            (ToolCall("c", "run", args),) if role == "assistant" and args else (),
            id=None,
        ),
        TEXTS,
        TEXTS,
        st.sampled_from(("user", "assistant", "tool")),
    ),
    max_size=8,
).map(lambda ms: [Message(m.role, m.content, m.tool_calls, id=i) for i, m in enumerate(ms)])


@settings(max_examples=300, deadline=None)
@given(MESSAGES, TEXTS, st.integers(1, 30))
def test_a_dropped_fact_is_absent_from_the_kept_text_and_present_in_its_original(
    originals: list[Message], kept: str, limit: int
) -> None:
    found = dropped_facts(originals, kept, limit)
    assert len(found) <= limit
    assert len({f.value for f in found}) == len(found), "each value once"
    assert found == dropped_facts(originals, kept, limit), "deterministic"
    by_id = {m.id: m for m in originals}
    order: list[int] = []
    for fact in found:
        assert fact.value not in kept
        source = by_id[fact.message_id]
        assert fact.value in source.content or any(
            fact.value in call.arguments for call in source.tool_calls
        )
        assert len(fact.value.lstrip("-+")) > 1, "trivial numbers are skipped"
        assert fact.message_id is not None
        order.append(fact.message_id)
    assert order == sorted(order), "in order of first occurrence"


def test_escaped_newlines_in_code_separate_words() -> None:
    code = Message("tool", r"import os\nds.file_meta_id = 42\tretry_count", id=3)
    assert [f.value for f in dropped_facts([code], kept_text="")] == [
        "ds.file_meta_id",
        "42",
        "retry_count",
    ]
