"""Chat files (issue 26 item 5): the product's own JSON imports back to the same
conversation — summaries stay summaries, compacted originals stay compacted, records stay
records and never reach the model, pins stay pins; OpenAI messages import as before; a bad
file is refused with its message and field named, and writes nothing."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.chat_archive import archive_of
from agents.chat_files import ChatFileError, export_chat, import_chat, markdown_of
from agents.event_records import EventRecord
from agents.models import ChatSession, Message, Role
from agents.selectors import history_load
from agents.services import event_record_append, message_append, message_pin_set
from compaction.context import llm_context_for_session
from tests.factories import make_agent, make_session, make_user
from tests.support.history import apply_compaction

pytestmark = pytest.mark.django_db


def _compacted_chat() -> ChatSession:
    owner = make_user()
    session = make_session(
        owner=owner, agent=make_agent(name="导出助手", owner=owner), title="导出"
    )
    old = [
        message_append(session=session, role=Role.USER, content="目标：重构 src/parser.py"),
        message_append(
            session=session,
            role=Role.ASSISTANT,
            content="",
            tool_calls=[{"id": "c1", "name": "read_file", "arguments": '{"path": "a.py"}'}],
        ),
        message_append(session=session, role=Role.TOOL, content="x" * 500, tool_call_id="c1"),
        message_append(session=session, role=Role.ASSISTANT, content="读完了。"),
    ]
    tool_out = message_append(
        session=session, role=Role.TOOL, content="long output " * 50, tool_call_id="c2"
    )
    apply_compaction(session, old, pruned=[tool_out])
    event_record_append(
        session=session,
        content="本轮已停止",
        record=EventRecord(system_type="turn_event", status="stopped"),
    )
    pinned = message_append(session=session, role=Role.USER, content="记住：端口 6380")
    message_pin_set(message=pinned, pinned=True)
    message_append(session=session, role=Role.ASSISTANT, content="好的。")
    return ChatSession.objects.get(pk=session.pk)


def _shape(session: ChatSession, view: str) -> list[tuple]:
    return [
        (
            m.role,
            m.content,
            m.tool_calls,
            m.tool_call_id,
            m.is_compaction_summary,
            m.compacted_at is not None,
            m.pruned_at is not None,
            m.pinned,
            (m.metadata or {}).get("systemType"),
        )
        for m in history_load(session=session, view=view)
    ]


def _model_view(session: ChatSession) -> list[tuple]:
    return [(m.role, m.content, m.tool_call_id) for m in llm_context_for_session(session)]


def test_the_products_own_file_imports_back_to_the_same_conversation() -> None:
    chat = _compacted_chat()
    exported = export_chat(session=chat)
    again = import_chat(user=chat.owner, raw=exported.body.encode())
    assert again.pk != chat.pk and again.title == "导出" and again.agent_id == chat.agent_id
    assert _shape(again, "full") == _shape(chat, "full")
    assert _shape(again, "compacted") == _shape(chat, "compacted")
    assert _model_view(again) == _model_view(chat)
    assert not any("本轮已停止" in c for _r, c, _i in _model_view(again))  # the record
    assert again.compaction_count == 1
    summary = again.messages.get(is_compaction_summary=True)
    assert again.messages.filter(compacted_into=summary).count() == 4
    originals = [m.created_at for m in history_load(session=chat, view="full")]
    assert [m.created_at for m in history_load(session=again, view="full")] == originals
    # and it exports to the same file again (but for when it was exported)
    first, second = json.loads(exported.body), archive_of(again)
    assert {**first, "exportedAt": ""} == {**second, "exportedAt": ""}


def test_plain_openai_messages_still_import() -> None:
    owner = make_user()
    agent = make_agent(owner=owner)
    raw = json.dumps(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    )
    session = import_chat(user=owner, raw=raw.encode(), agent_id=agent.pk)
    assert [(m.role, m.content) for m in history_load(session=session)] == [
        ("user", "hi"),
        ("assistant", "hello"),
    ]


@pytest.mark.parametrize(
    ("mutate", "says"),
    [
        (lambda d: d.update(version=2), "version 2 is not supported"),
        (lambda d: d["messages"][1].update(role="robot"), "message 1: unknown role"),
        (lambda d: d["messages"][0].update(compactedInto=99), "message 0: 'compactedInto'"),
        (lambda d: d["messages"][2].update(pinned="yes"), "message 2: 'pinned' must be true"),
        (lambda d: d["messages"][3].update(content="a\x00b"), "message 3: contains a NUL"),
        (lambda d: d["messages"][0].update(createdAt="yesterday"), "message 0: 'createdAt'"),
    ],
)
def test_a_bad_file_names_the_message_and_writes_nothing(mutate, says) -> None:
    chat = _compacted_chat()
    data = archive_of(chat)
    mutate(data)
    before = (ChatSession.objects.count(), Message.objects.count())
    with pytest.raises(ChatFileError, match=says):
        import_chat(user=chat.owner, raw=json.dumps(data).encode())
    assert (ChatSession.objects.count(), Message.objects.count()) == before


@pytest.mark.parametrize(
    ("raw", "says"),
    [(b"\xff\xfe", "not UTF-8"), (b"{nope", "not JSON"), (b"[1]", "message 0: must be an object")],
)
def test_not_a_chat_at_all_is_refused(raw, says) -> None:
    owner = make_user()
    make_agent(owner=owner)
    with pytest.raises(ChatFileError, match=says):
        import_chat(user=owner, raw=raw)


def test_another_users_agent_is_refused() -> None:
    chat = _compacted_chat()
    stranger_agent = make_agent(owner=make_user())
    with pytest.raises(ChatFileError, match="no agent"):
        import_chat(
            user=chat.owner, raw=export_chat(session=chat).body.encode(), agent_id=stranger_agent.pk
        )


def test_markdown_marks_summaries_records_and_tool_output() -> None:
    text = markdown_of(_compacted_chat(), "full")
    assert text.startswith("# 导出\n")
    assert "## Compaction summary" in text and "## Record (turn_event)" in text
    assert "· compacted" in text and "· pinned" in text
    assert "```\n" + "x" * 500 + "\n```" in text and "Tool call `read_file`" in text


def test_the_api_exports_only_the_owners_chat_and_imports_a_file(client) -> None:
    chat = _compacted_chat()
    url = reverse("api:session-export", args=[chat.pk])
    client.force_login(make_user())
    assert client.get(url).status_code == 404
    client.force_login(chat.owner)
    answer = client.get(url)
    assert answer.status_code == 200 and "attachment" in answer["Content-Disposition"]
    markdown = client.get(url, {"as": "markdown"})
    assert markdown["Content-Type"].startswith("text/markdown")
    assert client.get(url, {"as": "pdf"}).status_code == 400
    upload = client.post(
        reverse("api:session-import"), {"file": _file(answer.content)}, format="multipart"
    )
    assert upload.status_code == 201 and upload.json()["messages"] == chat.messages.count()
    bad = client.post(reverse("api:session-import"), {"file": _file(b"{}")})
    assert bad.status_code == 400 and bad.json()["reason"] == "bad_file"


def _file(content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("chat.json", content, content_type="application/json")


def test_the_page_import_opens_the_new_chat_or_says_why_not(client) -> None:
    chat = _compacted_chat()
    client.force_login(chat.owner)
    body = export_chat(session=chat).body.encode()
    done = client.post(reverse("chat:import"), {"file": _file(body)})
    assert done.status_code == 302 and "/chat/" in done["Location"]
    refused = client.post(reverse("chat:import"), {"file": _file(b"[{]")}, follow=True)
    assert "not JSON" in refused.content.decode()


_texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.tuples(st.sampled_from(["user", "assistant"]), _texts, st.booleans()), max_size=8)
)
def test_export_import_export_is_the_same_file(turns) -> None:
    owner = make_user()
    session = make_session(owner=owner, agent=make_agent(owner=owner))
    for role, text, pinned in turns:
        message = message_append(session=session, role=role, content=text)
        if pinned:
            message_pin_set(message=message, pinned=True)
    first = archive_of(session)
    again = import_chat(user=owner, raw=json.dumps(first).encode())
    second = archive_of(again)
    assert {**first, "exportedAt": ""} == {**second, "exportedAt": ""}


def test_the_commands_round_trip_the_products_file(tmp_path) -> None:
    from io import StringIO

    from django.core.management import call_command

    chat = _compacted_chat()
    out = StringIO()
    call_command("export_session", str(chat.pk), "--as", "netaclaw", stdout=out)
    path = tmp_path / "chat.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    printed = StringIO()
    call_command(
        "import_session",
        str(path),
        "--agent",
        str(chat.agent_id),
        "--user",
        chat.owner.username,
        stdout=printed,
    )
    again = ChatSession.objects.get(pk=printed.getvalue().split()[-1])
    assert _shape(again, "full") == _shape(chat, "full")
