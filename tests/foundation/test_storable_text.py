"""The domain's write boundary stores any text (issue 15, items 4 and 6): NUL, lone surrogates
and tool-call ids over the column's 200 characters, on SQLite and on PostgreSQL; an import
with bad input is a one-line error that writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import ChatSession, Message
from agents.services import (
    compaction_apply,
    message_append,
    messages_bulk_append,
    user_message_append,
)
from agents.storable import MAX_TOOL_CALL_ID, storable_call_id, storable_json, storable_text
from tests.factories import make_agent, make_session, make_user

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
LONG_ID = "toolu_" + "a" * 250


def test_storable_text_is_deterministic_idempotent_and_leaves_good_text_alone() -> None:
    assert storable_text("你好 😀 a\tb") == "你好 😀 a\tb"
    assert storable_text("a\x00b\udcffc\ud83d") == "a\ufffdb\\udcffc\\ud83d"
    assert storable_text(storable_text("a\x00\ud800")) == storable_text("a\x00\ud800")
    assert storable_json({"k\x00": ["\udc80", 1, None]}) == {"k\ufffd": ["\\udc80", 1, None]}
    short = storable_call_id(LONG_ID)
    assert len(short) <= MAX_TOOL_CALL_ID and short.startswith("toolu_aaa")
    assert short == storable_call_id(LONG_ID) == storable_call_id(short)
    assert storable_call_id(LONG_ID + "b") != short
    assert storable_call_id("call_1") == "call_1"


def test_message_append_stores_nul_surrogates_and_long_ids() -> None:
    session = make_session()
    answer = message_append(
        session=session,
        role="assistant",
        content="a\x00b",
        tool_calls=[{"id": LONG_ID, "name": "read\x00", "arguments": '{"p": "\x00\udcff"}'}],
        metadata={"note": "x\x00"},
    )
    result = message_append(
        session=session,
        role="tool",
        content="listing: bad\udcffname.txt\x00",
        tool_call_id=LONG_ID,
        metadata={"toolName": "list_files", "isError": False},
    )
    stored = {m.pk: m for m in Message.objects.filter(session=session)}
    answer_row, result_row = stored[answer.pk], stored[result.pk]
    assert answer_row.content == "a\ufffdb"
    assert answer_row.tool_calls[0]["name"] == "read\ufffd"
    assert answer_row.tool_calls[0]["arguments"] == '{"p": "\ufffd\\udcff"}'
    assert answer_row.metadata == {"note": "x\ufffd"}
    assert result_row.content == "listing: bad\\udcffname.txt\ufffd"
    assert answer_row.tool_calls[0]["id"] == result_row.tool_call_id == storable_call_id(LONG_ID)


def test_a_users_message_with_nul_names_the_session_safely() -> None:
    session = make_session()
    user_message_append(session=session, content="标题\x00里")
    session.refresh_from_db()
    assert session.title == "标题\ufffd里"
    assert Message.objects.get(session=session).content == "标题\ufffd里"


def test_bulk_append_and_compaction_write_back_store_the_same_way() -> None:
    session = make_session()
    rows = [
        {"role": "user", "content": "q\x00"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": LONG_ID, "name": "f", "arguments": "{}"}],
        },
        {"role": "tool", "content": "r\udcff", "tool_call_id": LONG_ID},
        {"role": "assistant", "content": "done"},
    ]
    stored = messages_bulk_append(session=session, rows=rows)
    fresh = list(Message.objects.filter(session=session).order_by("position"))
    assert [m.content for m in fresh] == ["q\ufffd", "", "r\\udcff", "done"]
    assert fresh[1].tool_calls[0]["id"] == fresh[2].tool_call_id == storable_call_id(LONG_ID)
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in stored[:3]],
        pruned_ids=[],
        summary_content="summary \x00 of \udcff",
        pruned_token_estimate=0,
        event_content="compacted \x00",
        event_payload={"instructions": "keep\x00"},
        summary_metadata={"focus": "\x00"},
    )
    assert applied.summary_message is not None
    summary = Message.objects.get(pk=applied.summary_message.pk)
    assert summary.content == "summary \ufffd of \\udcff" and summary.metadata == {
        "focus": "\ufffd"
    }
    event = Message.objects.get(pk=applied.event_message.pk)
    assert event.content == "compacted \ufffd" and event.metadata["instructions"] == "keep\ufffd"


# --- import_session --------------------------------------------------------------------


def _import(path: Path, agent_id: int) -> str:
    from io import StringIO

    out = StringIO()
    call_command("import_session", str(path), "--agent", str(agent_id), stdout=out)
    return out.getvalue().strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (
            json.dumps([{"role": "user", "content": "a\x00b"}]),
            "message 0: contains a NUL character",
        ),
        (
            json.dumps(
                [
                    {"role": "assistant", "tool_calls": [{"id": "c\x00", "name": "f"}]},
                ]
            ),
            "message 0: contains a NUL character",
        ),
        (json.dumps([{"role": "user", "content": "a\udcffb"}]), "message 0: contains invalid"),
    ],
    ids=["deep", "nul-content", "nul-call-id", "surrogate"],
)
def test_a_bad_import_is_a_one_line_error_that_writes_nothing(tmp_path, text, error) -> None:
    source = tmp_path / "bad.json"
    source.write_text(text, encoding="utf-8", errors="surrogatepass")
    agent = make_agent()
    make_user("importer", is_superuser=True)
    with pytest.raises(CommandError) as info:
        _import(source, agent.pk)
    assert error in str(info.value) and "\n" not in str(info.value)
    assert not ChatSession.objects.exists() and not Message.objects.exists()


def test_an_import_with_long_tool_call_ids_keeps_each_pair(tmp_path) -> None:
    source = tmp_path / "long-ids.json"
    messages = [
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": LONG_ID, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": LONG_ID, "content": "ok"},
    ]
    source.write_text(json.dumps(messages))
    agent = make_agent()
    make_user("importer", is_superuser=True)
    session_id = _import(source, agent.pk)
    stored = list(Message.objects.filter(session_id=session_id).order_by("position"))
    assert stored[1].tool_calls[0]["id"] == stored[2].tool_call_id
    assert len(stored[2].tool_call_id) <= MAX_TOOL_CALL_ID


@pytest.mark.django_db(transaction=True)
def test_a_deeply_nested_import_prints_one_line_in_a_real_process(tmp_path) -> None:
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000 + "]" * 100_000)
    agent = make_agent()
    make_user("importer", is_superuser=True)
    from tests.support.daphne import database_url

    env = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "NETACLAW_VAR_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "manage.py", "import_session", str(source), "--agent", str(agent.pk)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"CommandError: {source} is nested too deeply to be a message list"
    ]
