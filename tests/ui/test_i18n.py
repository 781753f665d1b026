"""Both languages: the seed's Chinese wording by default, English on request."""

from __future__ import annotations

import pytest
from django.conf import settings

from agents.services import compaction_apply, message_append
from tests.ui.html import parse

pytestmark = pytest.mark.django_db

SEED_ZH = [
    "自动压缩阈值 70%",
    "阈值 70% · 已压缩 1 次",
    "上下文已压缩 · 移除 2 条消息 · 节省 50% token",
    "查看摘要",
    "输入消息",
    "正在压缩上下文...",
]
EN = [
    "Auto-compaction threshold 70%",
    "threshold 70% · compacted 1 time",
    "Context compacted · removed 2 messages · saved 50% tokens",
    "View summary",
    "Message",
    "Compacting context...",
]


@pytest.fixture
def compacted_session(session):
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(4)]
    compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[1:3]],
        pruned_ids=[],
        summary_content="summary",
        pruned_token_estimate=0,
        event_content="done",
        event_payload={
            "status": "done",
            "removedCount": 2,
            "tokensBefore": 800,
            "tokensAfter": 400,
        },
    )
    return session


def _text(response) -> str:
    return " ".join(parse(response.content).text().split())


def test_default_language_is_simplified_chinese(zh_client, compacted_session) -> None:
    response = zh_client.get(f"/chat/{compacted_session.pk}/")
    assert response.headers["Content-Language"] == "zh-hans"
    text = _text(response)
    for phrase in SEED_ZH:
        assert phrase in text, phrase
    assert '<html lang="zh-hans">' in response.content.decode()


def test_accept_language_english(zh_client, compacted_session) -> None:
    response = zh_client.get(f"/chat/{compacted_session.pk}/", headers={"Accept-Language": "en"})
    assert response.headers["Content-Language"] == "en"
    text = _text(response)
    for phrase in EN:
        assert phrase in text, phrase
    assert "自动压缩阈值" not in text


def test_language_cookie_english(en_client, compacted_session) -> None:
    text = _text(en_client.get(f"/chat/{compacted_session.pk}/?view=full"))
    assert "Showing the full history (including compacted messages)" in text
    assert "Switch back to the compacted view" in text


def test_language_cookie_wins_over_accept_language(zh_client, compacted_session) -> None:
    zh_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    text = _text(
        zh_client.get(f"/chat/{compacted_session.pk}/?view=full", headers={"Accept-Language": "en"})
    )
    assert "当前显示完整历史（含已压缩消息） · 切换回压缩视图" in text


def test_switching_language_through_set_language(zh_client, compacted_session) -> None:
    url = f"/chat/{compacted_session.pk}/"
    response = zh_client.post("/i18n/setlang/", {"language": "en", "next": url})
    assert response.status_code == 302 and response["Location"] == url
    assert "Auto-compaction threshold 70%" in _text(zh_client.get(url))
    zh_client.post("/i18n/setlang/", {"language": "zh-hans", "next": url})
    assert "自动压缩阈值 70%" in _text(zh_client.get(url))


@pytest.mark.parametrize(
    ("language", "phrases"),
    [
        (
            "zh-hans",
            [
                "上下文压缩",
                "辅助模型",
                "继承全局默认",
                "压缩策略",
                "更多策略开发中",
                "触发阈值",
                "保护头部",
                "留空 = 继承系统级配置",
            ],
        ),
        (
            "en",
            [
                "Context compaction",
                "Auxiliary model",
                "Inherit the system default",
                "Compaction strategy",
                "More strategies are in development",
                "Trigger threshold",
                "Protected head",
            ],
        ),
    ],
)
def test_agent_page_in_both_languages(client, staff, agent, language, phrases) -> None:
    client.force_login(staff)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    text = _text(client.get(f"/agents/{agent.pk}/"))
    for phrase in phrases:
        assert phrase in text, phrase


@pytest.mark.parametrize(
    ("language", "label"), [("zh-hans", "可作为辅助模型"), ("en", "Usable as auxiliary model")]
)
def test_channel_page_in_both_languages(client, staff, channel, language, label) -> None:
    client.force_login(staff)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    doc = parse(client.get(f"/channels/{channel.pk}/").content)
    labels = [n.text().strip() for n in doc.select("label", **{"for": "id_is_auxiliary"})]
    assert labels == [label]


def test_login_page_in_both_languages(client) -> None:
    assert "用户名" in _text(client.get("/accounts/login/"))
    assert "User name" in _text(client.get("/accounts/login/", headers={"Accept-Language": "en"}))
