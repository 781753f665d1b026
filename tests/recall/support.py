"""Real transcripts with a planted fact, imported and compacted for the recall tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agents.models import ChatSession, Message
from agents.transfer import session_import
from compaction.context import llm_context_for_session
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_user

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "data" / "transcripts"

# an English SWE transcript (mini-swe-agent on Django) and a Chinese user's Cursor session
ENGLISH = "006_miniswe-deepseek-django-14238.json"
CHINESE = "020_specstory-cursor-zh-radio-recognition.json"

ENGLISH_FACT = (
    "NOTE: the nightly reconciliation job is owned by Priya Natarajan and its "
    "retry budget is seventeen attempts."
)
CHINESE_FACT = "备注：电台识别服务的回调密钥保存在蓝鲸配置中心，负责人是王小明。"

SUMMARY = (
    "## Goal\nFix the reported bug and keep the test suite green.\n## Progress\n"
    + "- Investigated the code paths involved and ran the tests.\n" * 30
)


def stored_first(session: ChatSession) -> int:
    return Message.objects.filter(session=session).order_by("position").first().position


@dataclass(frozen=True)
class Planted:
    session: ChatSession
    message: Message  # the tool output that holds the fact


def plant(messages: list[dict], fact: str, *, nth_tool: int) -> int:
    """Put ``fact`` into the middle of the ``nth_tool``-th tool output; its index."""
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    index = tools[nth_tool]
    content = messages[index].get("content") or ""
    half = len(content) // 2
    messages[index]["content"] = content[:half] + "\n" + fact + "\n" + content[half:]
    return index


def compacted_transcript(
    server: ScriptedLLMServer,
    tmp_path: Path,
    *,
    name: str = ENGLISH,
    fact: str = ENGLISH_FACT,
    nth_tool: int = 4,
    owner=None,
    window: int = 16_000,
) -> Planted:
    """The transcript with ``fact`` planted in one tool output, imported and compacted by
    the real service (the scripted server is the auxiliary model); the planted output is
    out of the model's view afterwards, and the fact is nowhere in what the model sees."""
    messages = json.loads((TRANSCRIPTS / name).read_text(encoding="utf-8"))
    index = plant(messages, fact, nth_tool=nth_tool)
    source = tmp_path / name
    source.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
    channel = make_channel(
        base_url=server.openai_base_url,
        context_window=window,
        is_auxiliary=True,
        model="aux-model",
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    user = owner or make_user()
    session, count = session_import(path=source, agent_id=agent.pk, username=user.username)
    assert count == len(messages)
    server.responder = lambda body, wire: Reply(text=SUMMARY)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert outcome.status == "done", outcome
    planted = Message.objects.get(
        session=session, is_compaction_summary=False, content__contains=fact
    )
    assert planted.role == "tool" and planted.position - stored_first(session) == index
    assert planted.compacted_at is not None or planted.pruned_at is not None
    seen = json.dumps([m.content for m in llm_context_for_session(session)], ensure_ascii=False)
    assert fact not in seen and fact[10:40] not in seen, "the fact is only in the original"
    return Planted(session, planted)
