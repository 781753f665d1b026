"""The service against a real auxiliary model (the scripted server through the SDKs)."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

import condense as core
from agents.models import Message
from agents.selectors import history_load
from agents.services import lease_acquire, messages_bulk_append
from compaction.context import core_messages_for_session, policy_for_session
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Empty, Fail, Hang, NonJSON, Reply
from tests.factories import make_agent, make_user
from tests.support.history import session_to_compact, stored_rows
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"  # a public transcript (see ../shared/transcripts/SOURCES.md)


def test_forty_messages_compact_into_one_summary(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    messages = core_messages_for_session(session)
    planned = core.plan(messages, policy_for_session(session, messages=messages), force=True)
    assert planned.requests is not None
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert outcome.status == "done" and outcome.removed_count > 20
    compacted = history_load(session=session, include_events=False)
    full = history_load(session=session, view="full", include_events=False)
    assert len(compacted) < 40 and len(full) == 41
    assert [m.position for m in full] == sorted(m.position for m in full)
    assert (
        Message.objects.filter(session=session, compacted_at__isnull=False).count()
        == outcome.removed_count
    )
    body = llm_server.requests[0].body
    assert body["model"] == "aux-model" and body["temperature"] == 0.3
    # the seed's max(2000, min(20% of compressed, 12000)), capped by the room under the
    # compaction target (issue 25): the view must land with headroom
    assert body["max_tokens"] == planned.requests.budget < 2000
    assert not {"reasoning_effort", "thinking", "reasoning"} & set(body)
    session.refresh_from_db()
    assert session.compaction_count == 1


def test_second_compaction_prompt_holds_the_previous_summary(llm_server) -> None:
    llm_server.enqueue(
        Reply(text=KEY_VALUE_SUMMARY), Reply(text=KEY_VALUE_SUMMARY.replace("42", "43"))
    )
    session = session_to_compact(llm_server)
    assert compact(CompactionRequest(str(session.pk), reason="manual")).status == "done"
    messages_bulk_append(session=session, rows=[{"role": "user", "content": "more " * 200}] * 10)
    assert compact(CompactionRequest(str(session.pk), reason="manual")).status == "done"
    prompt = llm_server.requests[1].body["messages"][0]["content"]
    assert "之前的摘要" in prompt or "Previous summary" in prompt
    assert "关键值 42" in prompt
    assert prompt.count("[CONTEXT COMPACTION]") == 0  # the body, not the framed message


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (Fail(status=500, should_retry=False), "upstream_error"),
        (Fail(status=429, should_retry=False), "rate_limited"),
        (NonJSON(), "invalid_response"),
        (Empty(), "summary_too_short"),
        (Reply(text="太短"), "summary_too_short"),
        (Hang(seconds=3), "timeout"),
    ],
)
def test_auxiliary_failures_leave_history_untouched(llm_server, settings, action, reason) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "AUXILIARY_TIMEOUT_SECONDS": 0.5}
    llm_server.enqueue(action)
    session = session_to_compact(llm_server)
    before = stored_rows(session)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert (outcome.status, outcome.reason) == ("failed", reason)
    assert stored_rows(session) == before
    bubble = Message.objects.get(session=session, metadata__systemType="compaction_event")
    assert bubble.metadata["status"] == "failed" and bubble.content.startswith("压缩失败：")
    status = getattr(action, "status", None)
    if status is not None:
        assert outcome.error.count(f"HTTP {status}") == 1, outcome.error


def test_no_auxiliary_model_is_a_clear_failure(llm_server) -> None:
    session = session_to_compact(llm_server, aux=None)
    before = stored_rows(session)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert (outcome.status, outcome.reason) == ("failed", "no_auxiliary_model")
    assert "未配置辅助模型" in outcome.error
    assert stored_rows(session) == before and llm_server.requests == []


def test_the_dictionary_default_is_used_when_the_agent_has_none(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server, aux="dict")
    assert compact(CompactionRequest(str(session.pk), reason="manual")).status == "done"


def test_a_held_lease_skips_without_any_request(llm_server) -> None:
    session = session_to_compact(llm_server)
    assert lease_acquire(session_id=session.pk, holder="other-process", seconds=60)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert (outcome.status, outcome.reason) == ("skipped", "in_progress")
    assert llm_server.requests == []


def test_a_failing_write_rolls_back_and_reports(llm_server, monkeypatch) -> None:
    from django.db import DatabaseError

    from agents import services

    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    before = stored_rows(session)

    def broken(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(services, "next_positions", broken)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert (outcome.status, outcome.reason) == ("failed", "storage_error")
    assert stored_rows(session) == before


def test_two_failures_pause_automatic_compaction(llm_server) -> None:
    llm_server.enqueue(
        Fail(status=500, should_retry=False),
        Fail(status=500, should_retry=False),
        Reply(text=KEY_VALUE_SUMMARY),
    )
    session = session_to_compact(llm_server)
    automatic = CompactionRequest(str(session.pk), reason="auto", force=True)
    compact(automatic)
    session.refresh_from_db()
    assert session.auto_compaction_paused_reason == ""
    compact(automatic)
    session.refresh_from_db()
    assert "连续两次失败" in session.auto_compaction_paused_reason
    assert compact(CompactionRequest(str(session.pk))).status == "done"
    session.refresh_from_db()
    assert session.auto_compaction_paused_reason == ""


def test_manual_failures_never_pause_automatic_compaction(llm_server) -> None:
    """README: only automatic compactions that fail count toward pausing (issue 25 item 6)."""
    llm_server.enqueue(*(Fail(status=500, should_retry=False) for _ in range(3)))
    session = session_to_compact(llm_server)
    for _ in range(3):
        assert compact(CompactionRequest(str(session.pk))).status == "failed"
    session.refresh_from_db()
    assert session.auto_compaction_paused_reason == ""


def test_nothing_to_compact_is_a_notice_not_a_failure(llm_server) -> None:
    """A fresh chat's /compact (README's own first step): compaction_skipped, no red bubble,
    nothing counted (issue 25 item 6)."""
    session = session_to_compact(llm_server, n=2)
    outcome = compact(CompactionRequest(str(session.pk)))
    assert (outcome.status, outcome.reason) == ("nothing", "nothing_to_compact")
    assert outcome.event is not None and outcome.event.type == "compaction_skipped"
    assert not Message.objects.filter(session=session, metadata__status="failed").exists()
    session.refresh_from_db()
    assert session.consecutive_compaction_failures == 0


def test_compact_session_command_json_and_dry_run(llm_server) -> None:
    session = session_to_compact(llm_server)
    out = StringIO()
    call_command("compact_session", str(session.pk), "--dry-run", "--json", stdout=out)
    lines = out.getvalue().strip().splitlines()
    dry = json.loads(lines[-1])
    assert dry["summary_message_id"] is None and dry["removed_count"] > 0
    # issue 25: what the summary would cost, before it is asked for
    assert "1 part(s), 1 request(s) in 1 round trip(s)" in lines[0], lines[0]
    assert "(target " in lines[0]
    assert (
        llm_server.requests == []
        and not Message.objects.filter(compacted_at__isnull=False).exists()
    )

    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    out = StringIO()
    call_command(
        "compact_session",
        str(session.pk),
        "--json",
        "--instructions",
        "文件",
        stdout=out,
        stderr=StringIO(),
    )
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert set(result) == {
        "session_id",
        "removed_count",
        "summary_message_id",
        "tokens_before",
        "tokens_after",
    }
    assert Message.objects.get(pk=result["summary_message_id"]).is_compaction_summary


def test_compact_session_command_errors(llm_server) -> None:
    with pytest.raises(CommandError, match="unknown session"):
        call_command("compact_session", "00000000-0000-0000-0000-000000000000")
    session = session_to_compact(llm_server, aux=None)
    with pytest.raises(CommandError, match="no_auxiliary_model"):
        call_command("compact_session", str(session.pk))


def test_import_export_round_trip_of_a_real_transcript() -> None:
    source = DATA / "transcripts" / "005_miniswe-deepseek-astropy-12907.json"
    agent = make_agent()
    make_user("importer", is_superuser=True)
    out = StringIO()
    call_command("import_session", str(source), "--agent", str(agent.pk), stdout=out)
    session_id = out.getvalue().strip().splitlines()[-1]
    out = StringIO()
    call_command("export_session", session_id, "--view", "full", stdout=out)
    exported = json.loads(out.getvalue())
    original = json.loads(source.read_text())
    assert [m["role"] for m in exported] == [m["role"] for m in original]
    assert [m["content"] or "" for m in exported] == [m.get("content") or "" for m in original]


def test_malformed_import_is_rejected_and_writes_nothing(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps([{"role": "user", "content": "ok"}, {"role": "tool", "content": "x"}])
    )
    agent = make_agent()
    make_user("importer", is_superuser=True)
    with pytest.raises(CommandError, match="message 1: a tool message needs a 'tool_call_id'"):
        call_command("import_session", str(bad), "--agent", str(agent.pk))
    assert not Message.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_compact_session_exit_code_in_a_real_process(tmp_path) -> None:
    env_db = tmp_path / "cmd.sqlite3"
    import os

    env = {**os.environ, "DATABASE_URL": f"sqlite:///{env_db}", "NETACLAW_VAR_DIR": str(tmp_path)}
    env.pop("REDIS_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    proc = subprocess.run(
        [sys.executable, "manage.py", "compact_session", "not-a-session"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "CommandError: unknown session not-a-session"


def test_admin_action_compacts_and_reports_per_session(llm_server, client) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    good = session_to_compact(llm_server)
    bad = session_to_compact(llm_server, aux=None)
    admin_user = make_user("root-admin", is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    response = client.post(
        "/admin/agents/chatsession/",
        {"action": "compact_selected", "_selected_action": [str(good.pk), str(bad.pk)]},
        follow=True,
    )
    text = response.content.decode()
    # the page is in the default language (zh-hans), the reason code is the wire's
    assert "移除 " in text and "no_auxiliary_model" in text
    good.refresh_from_db()
    assert good.compaction_count == 1
