"""A stateful model of a session: hypothesis drives the real services in random orders.

Rules write user turns, plain assistant answers, assistant tool turns (calls plus
their results, sometimes large enough to be pruned), interrupted tool turns (a
call whose result never came), successful compactions (manual and automatic) and
failing ones (the scripted auxiliary model answers 500, 429 or empty). All of it
goes through ``agents.services.message_append`` and
``compaction.run.compact`` against the scripted model server.

After every step:

* the full view (``history_load(view="full")``) is every message ever written, in
  the order written, with its original content (pruned tool output included), and
  each summary sits before every message it replaced;
* the compacted view, converted with ``llm_context_for_session``, is a request both
  providers accept: OpenAI — every assistant tool call answered right after it by
  exactly one result, no stray results; Anthropic (``build_anthropic_params``) —
  strictly alternating roles starting with the user, each ``tool_use`` answered in
  the next user turn and each ``tool_result`` answering the assistant turn before;
* a compaction that succeeds never raises the estimate (the outcome's figures and
  the stored per-message estimates); one that fails leaves every row as it was.
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from agents.models import ChatSession, Message, Role
from agents.selectors import history_load, model_visible
from agents.services import message_append
from compaction.context import llm_context_for_session
from compaction.request import CompactionRequest
from compaction.run import compact
from llm import ChannelConfig, LLMRequest, build_anthropic_params, build_openai_params
from scripted_llm import Empty, Fail, Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import history_rows
from tests.support.summaries import SEED_SUMMARY

pytestmark = pytest.mark.django_db

OPENAI = ChannelConfig(provider="openai", model="gpt-4o", api_key="k")
ANTHROPIC = ChannelConfig(provider="anthropic", model="claude-sonnet-4-5", api_key="k")

words = st.text(st.sampled_from(list("abcdefgh xyz_./\n中文代码修复")), min_size=1, max_size=30)
bodies = st.builds(lambda w, k: (w * k)[:8000], words, st.integers(min_value=1, max_value=250))
# an empty summary is asked for once more (condense.checks): it fails when both are
FAILURES = {
    "http-500": (Fail(status=500),),
    "http-429": (Fail(status=429),),
    "empty": (Empty(), Empty()),
}
FAILURE_REASONS = {
    "http-500": "upstream_error",
    "http-429": "rate_limited",
    "empty": "summary_empty",
}


class SessionModel(RuleBasedStateMachine):
    """One session per example; ``server`` and ``owner`` are set by the test."""

    server: ScriptedLLMServer
    owner: Any

    def __init__(self) -> None:
        super().__init__()
        self.written: list[tuple[int, str, str, str, str]] = []
        self.ids = itertools.count(1)
        self.session: ChatSession | None = None

    # -- set-up -------------------------------------------------------------

    @initialize(
        protect=st.sampled_from([1, 2, 3]),
        threshold=st.sampled_from([50, 70, 90]),
        prompt=st.sampled_from(["", "You are a careful coding agent."]),
        window=st.sampled_from([4_000, 8_000, 32_000]),
        prefill=st.lists(
            st.tuples(st.sampled_from(["user", "assistant", "tools"]), bodies),
            min_size=4,
            max_size=24,
        ),
    )
    def new_session(
        self,
        protect: int,
        threshold: int,
        prompt: str,
        window: int,
        prefill: list[tuple[str, str]],
    ) -> None:
        main = make_channel(base_url=self.server.openai_base_url, context_window=window)
        aux = make_channel(
            base_url=self.server.openai_base_url, context_window=16_000, is_auxiliary=True
        )
        agent = make_agent(
            system_prompt=prompt,
            model_channel=main,
            auxiliary_model_channel=aux,
            compaction_protect_first_n=protect,
            compaction_threshold_percent=threshold,
        )
        self.session = make_session(owner=self.owner, agent=agent)
        for kind, text in prefill:  # enough history that compactions have work to do
            if kind == "tools":
                self.assistant_tool_turn([text], preface="")
            else:
                self._append(kind, text)

    def _append(self, role: str, content: str, **extra: Any) -> Message:
        assert self.session is not None
        stored = message_append(session=self.session, role=role, content=content, **extra)
        calls = json.dumps(extra.get("tool_calls", []), sort_keys=True)
        self.written.append((stored.pk, role, content, calls, extra.get("tool_call_id", "")))
        return stored

    # -- rules --------------------------------------------------------------

    @rule(text=bodies)
    def user_turn(self, text: str) -> None:
        self._append(Role.USER, text)

    @rule(text=bodies)
    def assistant_answer(self, text: str) -> None:
        self._append(Role.ASSISTANT, text)

    @rule(
        results=st.lists(bodies, min_size=1, max_size=3),
        preface=st.sampled_from(["", "Let me look."]),
    )
    def assistant_tool_turn(self, results: list[str], preface: str) -> None:
        calls = [
            {"id": f"call_{next(self.ids)}", "name": "read_file", "arguments": f'{{"n": {i}}}'}
            for i in range(len(results))
        ]
        self._append(Role.ASSISTANT, preface, tool_calls=calls)
        for call, output in zip(calls, results, strict=True):
            self._append(
                Role.TOOL,
                output,
                tool_call_id=call["id"],
                metadata={"toolName": "read_file", "isError": False},
            )

    @rule(output=bodies)
    def reused_id_tool_turn(self, output: str) -> None:
        """Some OpenAI-compatible servers number calls per turn: ids repeat across turns."""
        call = {"id": "call_0", "name": "grep", "arguments": '{"q": "x"}'}
        self._append(Role.ASSISTANT, "", tool_calls=[call])
        self._append(Role.TOOL, output, tool_call_id="call_0")

    @rule()
    def interrupted_tool_turn(self) -> None:
        """A call whose result never arrived (a crash mid-tool): the request must still pair."""
        call = {"id": f"call_{next(self.ids)}", "name": "run", "arguments": "{}"}
        self._append(Role.ASSISTANT, "", tool_calls=[call])

    @rule(reason=st.sampled_from(["manual", "auto"]))
    def compaction(self, reason: str) -> None:
        self._compact(reason, failure=None)

    @rule(failure=st.sampled_from(sorted(FAILURES)))
    def failing_compaction(self, failure: str) -> None:
        self._compact("manual", failure=failure)

    def _compact(self, reason: str, failure: str | None) -> None:
        assert self.session is not None
        if failure is not None:
            self.server.enqueue(*FAILURES[failure])
        rows_before = history_rows(self.session)
        history_rows_before = history_rows(self.session, ignoring_metadata=("chainDepth",))
        depths_before = _summary_depths(self.session)
        estimate_before = _visible_estimate(self.session)
        outcome = compact(CompactionRequest(str(self.session.pk), reason=reason))
        asked = self.server.pending == 0  # the scripted failure was consumed by a request
        self.server.reset()
        self.server.responder = _summary_responder
        self.session.refresh_from_db()
        if outcome.status == "done":
            assert failure is None or not asked
            assert outcome.tokens_after <= outcome.tokens_before, outcome
            assert _visible_estimate(self.session) <= estimate_before, outcome
            return
        assert outcome.status in {"failed", "nothing"}, outcome
        if failure is not None and asked:
            assert outcome.reason == FAILURE_REASONS[failure], outcome
        if outcome.reason == "no_gain":
            # the summary in place could not be bettered: its chain depth is reset (so the
            # next /compact does not re-ground and discard again), and nothing else changes
            depths = _summary_depths(self.session)
            assert all(depths[pk] <= depth for pk, depth in depths_before.items()), depths
            ignoring = ("chainDepth",)
            assert history_rows(self.session, ignoring_metadata=ignoring) == history_rows_before
            return
        assert history_rows(self.session) == rows_before, "a failed compaction changed rows"

    # -- invariants ---------------------------------------------------------

    @invariant()
    def full_view_is_everything_written_in_order(self) -> None:
        if self.session is None:
            return
        full = history_load(session=self.session, view="full")
        originals = [
            (m.pk, m.role, m.content, json.dumps(m.tool_calls, sort_keys=True), m.tool_call_id)
            for m in full
            if not m.is_compaction_summary and not m.is_system_event
        ]
        assert originals == self.written
        seen: set[int] = set()
        for message in full:
            if message.compacted_into_id is not None:
                assert message.compacted_into_id in seen, "a summary sorts before its span"
            seen.add(message.pk)

    @invariant()
    def compacted_view_is_a_valid_request_for_both_providers(self) -> None:
        if self.session is None:
            return
        context = llm_context_for_session(self.session)
        request = LLMRequest(messages=tuple(context), max_tokens=256)
        _check_openai(build_openai_params(request, OPENAI)["messages"])
        _check_anthropic(build_anthropic_params(request, ANTHROPIC)["messages"])
        assert all(m.role != "system" or i == 0 for i, m in enumerate(context))


def _summary_responder(body: dict[str, Any], wire: str) -> Reply:
    return Reply(text=SEED_SUMMARY)


def _check_openai(messages: list[dict[str, Any]]) -> None:
    pending: set[str] = set()
    for message in messages:
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in pending, ("stray tool result", message)
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, ("tool calls without results before", message)
        if role == "assistant" and message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            assert len(ids) == len(set(ids))
            pending = set(ids)
    assert not pending, "the request ends with unanswered tool calls"


def _check_anthropic(messages: list[dict[str, Any]]) -> None:
    if not messages:
        return
    assert messages[0]["role"] == "user"
    for i, message in enumerate(messages):
        assert message["role"] in {"user", "assistant"}
        if i:
            assert message["role"] != messages[i - 1]["role"], "roles must alternate"
        assert message["content"], "no empty turn"
        uses = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        results = {b["tool_use_id"] for b in message["content"] if b.get("type") == "tool_result"}
        if results:
            before = messages[i - 1]["content"] if i else []
            asked = {b["id"] for b in before if b.get("type") == "tool_use"}
            assert results <= asked, "a tool_result answers the assistant turn right before it"
        if uses:
            after = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = {b["tool_use_id"] for b in after if b.get("type") == "tool_result"}
            assert uses <= answered, "every tool_use is answered in the next user turn"


def test_random_sessions_keep_every_message_and_always_make_valid_requests() -> None:
    with ScriptedLLMServer(responder=_summary_responder) as server:
        SessionModel.server = server
        SessionModel.owner = make_user()
        run_state_machine_as_test(
            SessionModel,
            settings=settings(
                max_examples=int(os.environ.get("NETACLAW_STATEFUL_EXAMPLES", "15")),
                stateful_step_count=12,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )


def _visible_estimate(session) -> int:
    return sum(model_visible(session=session).values_list("token_estimate", flat=True))


def _summary_depths(session) -> dict[int, int]:
    summaries = Message.objects.filter(session=session, is_compaction_summary=True)
    return {
        pk: (meta or {}).get("chainDepth", 0)
        for pk, meta in summaries.values_list("pk", "metadata")
    }
