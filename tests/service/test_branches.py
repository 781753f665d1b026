"""Regenerate, edit and the version switch on the history (issue 26 item 1): only the
active branch is the history and the model's context, every version comes back as it was,
and a compacted part of the chat is never forked or switched."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import branches, services
from agents.chat_archive import archive_of
from agents.chat_files import ChatFileError, export_chat, import_chat
from agents.event_records import EventRecord
from agents.models import Message, MessageFork, Role
from agents.selectors import history_load, llm_history_load, model_visible
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply
from tests.factories import make_session
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db


def _say(session, role: str, content: str) -> Message:
    return services.message_append(session=session, role=role, content=content)


def _contents(session) -> list[str]:
    return [m.content for m in llm_history_load(session=session)]


def _chat(session, *pairs: tuple[str, str]) -> list[Message]:
    stored = []
    for question, answer in pairs:
        stored += [_say(session, Role.USER, question), _say(session, Role.ASSISTANT, answer)]
    return stored


def test_regenerate_sets_the_answer_aside_and_a_switch_brings_it_back() -> None:
    session = make_session()
    q1, a1, q2, a2 = _chat(session, ("q1", "a1"), ("q2", "a2"))
    change = branches.branch_regenerate(session=session, message_id=a1.pk)
    assert change.runs_turn and change.marked.pk == q1.pk
    assert change.set_aside == (a1.pk, a2.pk)
    # the history ends with the question answered again: the next turn answers it
    assert _contents(session) == ["q1"]
    assert model_visible(session=session).count() == 1
    _say(session, Role.ASSISTANT, "a1 again")
    assert _contents(session) == ["q1", "a1 again"]
    assert branches.branch_marks(session=session)[q1.pk] == [
        branches.BranchMark(change.fork.pk, "regenerate", 2, 2)
    ]

    branches.branch_select(session=session, fork_id=change.fork.pk, version=1)
    assert _contents(session) == ["q1", "a1", "q2", "a2"]
    assert branches.branch_marks(session=session)[q1.pk][0].version == 1
    branches.branch_select(session=session, fork_id=change.fork.pk, version=2)
    assert _contents(session) == ["q1", "a1 again"]
    # nothing was lost: every message is stored, only one version is the history
    assert Message.objects.filter(session=session).count() == 5


def test_regenerating_the_same_answer_again_adds_a_version_to_the_same_fork() -> None:
    session = make_session()
    q1, a1 = _chat(session, ("q1", "a1"))
    first = branches.branch_regenerate(session=session, message_id=a1.pk)
    again = _say(session, Role.ASSISTANT, "a1 v2")
    second = branches.branch_regenerate(session=session, message_id=again.pk)
    assert second.fork.pk == first.fork.pk and second.mark.versions == 3
    _say(session, Role.ASSISTANT, "a1 v3")
    for version, answer in [(1, "a1"), (2, "a1 v2"), (3, "a1 v3")]:
        branches.branch_select(session=session, fork_id=first.fork.pk, version=version)
        assert _contents(session) == ["q1", answer]


def test_edit_stores_the_new_text_as_a_version_of_the_message() -> None:
    session = make_session()
    q1, a1, q2, a2 = _chat(session, ("q1", "a1"), ("q2", "a2"))
    change = branches.branch_edit(session=session, message_id=q2.pk, content="q2 edited")
    assert change.marked.content == "q2 edited" and change.marked.role == Role.USER
    assert _contents(session) == ["q1", "a1", "q2 edited"]
    _say(session, Role.ASSISTANT, "a2'")
    # editing the edited message again is the same fork's third version
    third = branches.branch_edit(session=session, message_id=change.marked.pk, content="q2 v3")
    assert third.fork.pk == change.fork.pk and third.mark.versions == 3
    branches.branch_select(session=session, fork_id=change.fork.pk, version=2)
    assert _contents(session) == ["q1", "a1", "q2 edited", "a2'"]
    branches.branch_select(session=session, fork_id=change.fork.pk, version=1)
    assert _contents(session) == ["q1", "a1", "q2", "a2"]
    marks = branches.branch_marks(session=session)
    assert marks == {q2.pk: [branches.BranchMark(change.fork.pk, "edit", 1, 3)]}


def test_a_fork_inside_a_version_comes_back_with_it() -> None:
    session = make_session()
    q1, a1 = _chat(session, ("q1", "a1"))
    outer = branches.branch_edit(session=session, message_id=q1.pk, content="Q1")
    A1 = _say(session, Role.ASSISTANT, "A1")
    q2 = _say(session, Role.USER, "q2")
    _say(session, Role.ASSISTANT, "a2")
    inner = branches.branch_regenerate(session=session, message_id=A1.pk)
    _say(session, Role.ASSISTANT, "A1 again")
    assert _contents(session) == ["Q1", "A1 again"]
    branches.branch_select(session=session, fork_id=outer.fork.pk, version=1)
    assert _contents(session) == ["q1", "a1"]
    # the inner fork's switch is in a version set aside: no switch, and refused
    assert set(branches.branch_marks(session=session)) == {q1.pk}
    with pytest.raises(branches.BranchRefused) as refused:
        branches.branch_select(session=session, fork_id=inner.fork.pk, version=1)
    assert refused.value.reason == "unknown_fork"
    branches.branch_select(session=session, fork_id=outer.fork.pk, version=2)
    assert _contents(session) == ["Q1", "A1 again"]
    branches.branch_select(session=session, fork_id=inner.fork.pk, version=1)
    assert _contents(session) == ["Q1", "A1", "q2", "a2"]
    assert q2.pk in {m.pk for m in history_load(session=session)}


def test_what_cannot_be_forked_is_refused_and_nothing_changes() -> None:
    session = make_session()
    q1, a1 = _chat(session, ("q1", "a1"))
    record = EventRecord("turn_event", "failed", reason="internal_error")
    event = services.event_record_append(session=session, content="x", record=record)
    cases = [
        (lambda: branches.branch_regenerate(session=session, message_id=q1.pk), "not_regenerable"),
        (
            lambda: branches.branch_edit(session=session, message_id=a1.pk, content="x"),
            "not_editable",
        ),
        (
            lambda: branches.branch_edit(session=session, message_id=event.pk, content="x"),
            "not_editable",
        ),
        (lambda: branches.branch_regenerate(session=session, message_id=10**9), "unknown_message"),
        (lambda: branches.branch_select(session=session, fork_id=10**9, version=1), "unknown_fork"),
    ]
    for attempt, reason in cases:
        with pytest.raises(branches.BranchRefused) as refused:
            attempt()
        assert refused.value.reason == reason
    assert not MessageFork.objects.exists()
    assert _contents(session) == ["q1", "a1"]
    fork = branches.branch_regenerate(session=session, message_id=a1.pk).fork
    with pytest.raises(branches.BranchRefused) as refused:
        branches.branch_select(session=session, fork_id=fork.pk, version=3)
    assert refused.value.reason == "unknown_version"


def test_a_compacted_part_of_the_chat_is_neither_forked_nor_switched() -> None:
    session = make_session()
    q1, a1, q2, a2 = _chat(session, ("q1", "a1"), ("q2", "a2"))
    fork = branches.branch_regenerate(session=session, message_id=a2.pk).fork
    a2b = _say(session, Role.ASSISTANT, "a2 again")
    # a summary replaces q1 … a2 again (the version now shown is in it)
    summary = _say(session, Role.USER, "[summary]")
    Message.objects.filter(pk=summary.pk).update(is_compaction_summary=True, position=q1.position)
    Message.objects.filter(pk__in=[q1.pk, a1.pk, q2.pk, a2b.pk]).update(
        compacted_at=timezone.now(), compacted_into=summary
    )
    for attempt in (
        lambda: branches.branch_select(session=session, fork_id=fork.pk, version=1),
        lambda: branches.branch_regenerate(session=session, message_id=a2b.pk),
        lambda: branches.branch_edit(session=session, message_id=q2.pk, content="x"),
    ):
        with pytest.raises(branches.BranchRefused) as refused:
            attempt()
        assert refused.value.reason == "inside_compacted"
    assert Message.objects.filter(session=session, fork__isnull=True).count() == 5


def test_the_versions_set_aside_are_in_the_full_history_beside_the_switch() -> None:
    session = make_session()
    q1, a1 = _chat(session, ("q1", "a1"))
    fork = branches.branch_regenerate(session=session, message_id=a1.pk).fork
    _say(session, Role.ASSISTANT, "a1 again")
    rows = branches.messages_json(
        session=session, messages=history_load(session=session, view="full"), view="full"
    )
    marked = next(r for r in rows if r["id"] == q1.pk)["answers"]
    assert {k: v for k, v in marked.items() if k != "otherVersions"} == {
        "forkId": fork.pk,
        "kind": "regenerate",
        "version": 2,
        "versions": 2,
    }
    assert [
        (v["version"], [m["content"] for m in v["messages"]]) for v in marked["otherVersions"]
    ] == [(1, ["a1"])]
    compacted = branches.messages_json(
        session=session, messages=history_load(session=session), view="compacted"
    )
    assert "otherVersions" not in next(r for r in compacted if r["id"] == q1.pk)["answers"]


# --- the property: any sequence of turns, regenerates, edits and switches ----------------

OPS = st.lists(
    st.tuples(st.sampled_from(["turn", "regenerate", "edit", "select"]), st.integers(0, 50)),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS)
def test_any_sequence_keeps_each_version_as_it_was(ops) -> None:
    """A reference model keeps, per fork, each version's conversation as a list; after every
    step the stored active branch equals the model's, and a switch away and back is
    lossless."""
    session = make_session()
    counter = iter(range(10_000))
    _chat(session, ("q0", "a0"))

    def snapshot() -> list[str]:
        return _contents(session)

    seen: dict[tuple[int, int], list[str]] = {}
    for op, pick in ops:
        history = llm_history_load(session=session)
        if op == "turn":
            n = next(counter)
            _chat(session, (f"q{n}", f"a{n}"))
        elif op == "regenerate":
            answers = [m for m in history if m.role == Role.ASSISTANT]
            if answers:
                change = branches.branch_regenerate(
                    session=session, message_id=answers[pick % len(answers)].pk
                )
                _say(session, Role.ASSISTANT, f"r{next(counter)}")
                seen[(change.fork.pk, change.fork.selected)] = snapshot()
        elif op == "edit":
            questions = [m for m in history if m.role == Role.USER]
            if questions:
                change = branches.branch_edit(
                    session=session,
                    message_id=questions[pick % len(questions)].pk,
                    content=f"e{next(counter)}",
                )
                seen[(change.fork.pk, change.fork.selected)] = snapshot()
        else:
            marks = [m for found in branches.branch_marks(session=session).values() for m in found]
            if marks:
                mark = marks[pick % len(marks)]
                before = snapshot()
                target = pick % mark.versions + 1
                branches.branch_select(session=session, fork_id=mark.fork_id, version=target)
                branches.branch_select(session=session, fork_id=mark.fork_id, version=mark.version)
                assert snapshot() == before  # there and back again: nothing changed
        active = snapshot()
        # the model's view is exactly the active branch, in order, with no gaps
        assert [m.content for m in model_visible(session=session).order_by("position")] == active
        total = Message.objects.filter(session=session).count()
        parked = Message.objects.filter(session=session, fork__isnull=False).count()
        assert total - parked == len(active)


def test_the_products_file_keeps_every_version_and_the_forks() -> None:
    """Issue 26 items 1 and 5: export shows branches, and a re-import is the same chat —
    the same history, the same switches, and each version set aside comes back when chosen."""

    session = make_session()
    session.agent.owner = session.owner
    session.agent.save()
    q1, a1, q2, a2 = _chat(session, ("q1", "a1"), ("q2", "a2"))
    regenerated = branches.branch_regenerate(session=session, message_id=a2.pk).fork
    _say(session, Role.ASSISTANT, "a2 again")
    edited = branches.branch_edit(session=session, message_id=q1.pk, content="Q1").fork
    _say(session, Role.ASSISTANT, "A1")

    document = archive_of(session)
    assert [f["kind"] for f in document["forks"]] == ["regenerate", "edit"]
    again = import_chat(user=session.owner, raw=json.dumps(document).encode())
    assert _contents(again) == _contents(session) == ["Q1", "A1"]
    assert {**archive_of(again), "exportedAt": ""} == {**document, "exportedAt": ""}
    fork_of = {f.kind: f.pk for f in MessageFork.objects.filter(session=again)}
    branches.branch_select(session=again, fork_id=fork_of["edit"], version=1)
    branches.branch_select(session=session, fork_id=edited.pk, version=1)
    assert _contents(again) == _contents(session) == ["q1", "a1", "q2", "a2 again"]
    branches.branch_select(session=again, fork_id=fork_of["regenerate"], version=1)
    branches.branch_select(session=session, fork_id=regenerated.pk, version=1)
    assert _contents(again) == _contents(session) == ["q1", "a1", "q2", "a2"]

    markdown = export_chat(session=session, fmt="markdown").body
    assert "# Other versions" in markdown and "a2 again" in markdown and "Q1" in markdown
    openai = json.loads(export_chat(session=session, fmt="openai", view="compacted").body)
    assert "a2 again" not in json.dumps(openai, ensure_ascii=False)  # the active branch only


def test_a_file_with_a_bad_fork_is_refused_and_writes_nothing() -> None:

    session = make_session()
    session.agent.owner = session.owner
    session.agent.save()
    _, a1 = _chat(session, ("q1", "a1"))
    branches.branch_regenerate(session=session, message_id=a1.pk)
    _say(session, Role.ASSISTANT, "a1 again")
    document = archive_of(session)
    chats = session.owner.chat_sessions.count()
    for broken, says in [
        ({"forks": [{**document["forks"][0], "selected": 5}]}, "fork 0"),
        ({"forks": [{**document["forks"][0], "kind": "merge"}]}, "fork 0: 'kind'"),
        (
            {
                "messages": [
                    {**document["messages"][0], "fork": 3, "forkVersion": 1},
                    *document["messages"][1:],
                ]
            },
            "message 0",
        ),
    ]:
        with pytest.raises(ChatFileError) as refused:
            import_chat(user=session.owner, raw=json.dumps({**document, **broken}).encode())
        assert says in str(refused.value)
    assert session.owner.chat_sessions.count() == chats


@pytest.mark.django_db(transaction=True)
def test_compaction_summarizes_the_active_branch_only_and_leaves_the_others(llm_server) -> None:
    """Only the active branch is compacted: the summarizer never reads a version set aside,
    and that version is still there, whole, behind its switch (outside what was compacted)."""

    session = session_to_compact(llm_server, n=40)
    history = llm_history_load(session=session)
    last_answer = history[-1]
    assert last_answer.role == Role.ASSISTANT
    fork = branches.branch_regenerate(session=session, message_id=last_answer.pk).fork
    _say(session, Role.ASSISTANT, "REGENERATED-ANSWER")
    # a fork early in the chat as well, whose first version holds a marker
    early = history[2]
    Message.objects.filter(pk=early.pk).update(content="SET-ASIDE-MARKER " + early.content)
    edit = branches.branch_edit(session=session, message_id=early.pk, content="EDITED-EARLY")
    for n in range(20):
        _chat(session, (f"later question {n}", f"later answer {n}"))
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert outcome.status == "done", outcome
    asked = json.dumps([r.body for r in llm_server.requests], ensure_ascii=False)
    assert "EDITED-EARLY" in asked and "SET-ASIDE-MARKER" not in asked
    assert "REGENERATED-ANSWER" not in asked  # it is in the version set aside by the edit
    parked = Message.objects.filter(session=session, fork=edit.fork)
    assert parked.filter(content__startswith="SET-ASIDE-MARKER").exists()
    assert not parked.filter(compacted_at__isnull=False).exists()
    assert fork.pk  # the regenerate's fork waits inside the edit's first version
