"""Golden cases for ``compress``: one JSON file per behaviour of seed §3, §9, §10.

Each case gives the input messages, the policy, whether the run is forced, the
scripted summaries the auxiliary model returns (in request order, a rejected answer's
retry included), and the expected outcome (or the rejection it raises, with its reason). The expected values were worked out by hand from the spec
(the arithmetic is in each case's ``why``), not dumped from the code.

Issue 25's figures (``target_tokens``, ``reached_target``, ``discarded_requests``) are
checked when a case gives them. Expected messages: ``role`` always; ``id`` (null for messages the core creates);
when an input id is given with no content key, the message must equal the input
message with that id (verbatim). ``content`` / ``content_prefix`` /
``content_contains`` / ``tool_calls`` (ids) / ``tool_call_id`` / ``is_summary``
are checked when present.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from condense import (
    SummaryRejected,
    SummaryRequest,
    SummaryTooShort,
    compress,
    estimate_tokens,
)
from condense.tokens import conservative_tokens
from condense.types import Message
from tests.core.cases import expand, message_from_json, policy_from_json

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("*.json"))
CASE_KEYS = {
    "why",
    "policy",
    "force",
    "focus",
    "previous_summary",
    "messages",
    "summaries",
    "expect",
}
EXPECT_KEYS = {
    "status",
    "raises",
    "reason",
    "estimates",
    "tokens_before",
    "tokens_after",
    "messages",
    "summarized_ids",
    "pruned_ids",
    "oversized_id",
    "requests",
    "max_request_tokens",
    "chunk_markers",
    "target_tokens",
    "reached_target",
    "discarded_requests",
}
MESSAGE_KEYS = {
    "role",
    "id",
    "content",
    "content_prefix",
    "content_contains",
    "tool_calls",
    "tool_call_id",
    "is_summary",
}
REQUEST_KEYS = {
    "is_update",
    "language",
    "max_output_tokens",
    "chunk_index",
    "chunk_count",
    "contains",
    "contains_once",
    "not_contains",
    "kind",
    "attempt",
    "target_tokens",
}


class ScriptedModel:
    """Returns the case's summaries in order and records every request (cases with
    concurrent parts run them one at a time, ``summary_concurrency: 1``, so the order is
    the plan's)."""

    def __init__(self, summaries: list[str]) -> None:
        self.summaries = list(summaries)
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        if len(self.requests) > len(self.summaries):
            raise AssertionError(f"unexpected summary request #{len(self.requests)}")
        return self.summaries[len(self.requests) - 1]


def _check_message(actual: Message, expected: dict[str, Any], inputs: dict[int, Message]) -> None:
    assert set(expected) <= MESSAGE_KEYS, set(expected) - MESSAGE_KEYS
    assert actual.role == expected["role"]
    assert actual.id == expected.get("id")
    content_keys = {"content", "content_prefix", "content_contains"} & set(expected)
    if actual.id is not None and not content_keys:
        assert actual == inputs[actual.id], f"message {actual.id} is not verbatim"
    if "content" in expected:
        assert actual.content == expand(expected["content"])
    if "content_prefix" in expected:
        assert actual.content.startswith(expand(expected["content_prefix"]))
    for text in expected.get("content_contains", ()):
        assert expand(text) in actual.content
    if "tool_calls" in expected:
        assert [c.id for c in actual.tool_calls] == expected["tool_calls"]
    if "tool_call_id" in expected:
        assert actual.tool_call_id == expected["tool_call_id"]
    if "is_summary" in expected:
        assert actual.is_summary is expected["is_summary"]


def _check_request(actual: SummaryRequest, expected: dict[str, Any]) -> None:
    assert set(expected) <= REQUEST_KEYS, set(expected) - REQUEST_KEYS
    keys = ("is_update", "language", "max_output_tokens", "chunk_index", "chunk_count", "kind")
    for key in (*keys, "attempt", "target_tokens"):
        if key in expected:
            assert getattr(actual, key) == expected[key], key
    for text in expected.get("contains", ()):
        assert expand(text) in actual.prompt, f"prompt lacks {expand(text)[:60]!r}"
    for text in expected.get("contains_once", ()):
        assert actual.prompt.count(expand(text)) == 1, f"not once: {expand(text)[:60]!r}"
    for text in expected.get("not_contains", ()):
        assert expand(text) not in actual.prompt, f"prompt has {expand(text)[:60]!r}"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    assert set(case) <= CASE_KEYS, set(case) - CASE_KEYS
    expect = case["expect"]
    assert set(expect) <= EXPECT_KEYS, set(expect) - EXPECT_KEYS
    messages = [message_from_json(m) for m in case["messages"]]
    inputs = {m.id: m for m in messages if m.id is not None}
    assert len(inputs) == len(messages), "every input message needs a distinct id"
    policy = policy_from_json(case["policy"])
    model = ScriptedModel([expand(s) for s in case.get("summaries", [])])

    if "estimates" in expect:
        assert [estimate_tokens(m) for m in messages] == expect["estimates"]

    def run():
        return compress(
            messages,
            policy,
            model,
            force=case.get("force", False),
            focus=expand(case["focus"]) if "focus" in case else None,
            previous_summary=case.get("previous_summary"),
        )

    if "raises" in expect:
        raises = {"SummaryTooShort": SummaryTooShort, "SummaryRejected": SummaryRejected}
        with pytest.raises(raises[expect["raises"]]) as raised:
            run()
        assert raised.value.reason == expect["reason"]
        result = None
    else:
        result = run()
        assert result.status == expect["status"]
        assert result.tokens_before == expect["tokens_before"]
        assert result.tokens_after == expect["tokens_after"]
        assert len(result.messages) == len(expect["messages"]), [
            (m.role, m.id) for m in result.messages
        ]
        for actual, expected in zip(result.messages, expect["messages"], strict=True):
            _check_message(actual, expected, inputs)
        assert sorted(result.summarized_ids) == sorted(expect.get("summarized_ids", []))
        assert sorted(result.pruned_ids) == sorted(expect.get("pruned_ids", []))
        assert result.oversized_id == expect.get("oversized_id")
        assert len(model.requests) == len(model.summaries), "every scripted summary is used"
        for key in ("target_tokens", "reached_target", "discarded_requests"):  # issue 25
            if key in expect:
                assert getattr(result, key) == expect[key], key

    expected_requests = expect.get("requests", [])
    assert len(model.requests) == len(expected_requests)
    for actual, expected in zip(model.requests, expected_requests, strict=True):
        _check_request(actual, expected)
    if "max_request_tokens" in expect:
        for request in model.requests:
            assert conservative_tokens(request.prompt) <= expect["max_request_tokens"]
    markers = [expand(m) for m in expect.get("chunk_markers", [])]
    where = []
    for marker in markers:
        hits = [i for i, r in enumerate(model.requests) if marker in r.prompt]
        assert len(hits) == 1, f"{marker!r} is in requests {hits}, expected exactly one"
        where.append(hits[0])
    assert where == sorted(where), "chunks keep the conversation's order"
