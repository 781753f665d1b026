"""Both languages: the seed's Chinese wording by default, English on request."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from agents.services import compaction_apply, message_append
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set
from tests.factories import make_agent, make_channel, make_session
from tests.support.event_records import system_event_append
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


CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
ATTRIBUTES = ("title", "aria-label", "placeholder", "aria-valuetext", "data-unknown-command")


def _chinese_in(html: bytes) -> list[str]:
    """Chinese characters in the page's text and labelling attributes, except the language
    select's own name for Chinese (a language is offered in its own name)."""
    doc = parse(html)
    found = [
        " ".join(node.text().split())
        for node in doc.iter()
        if node.tag not in {"option", "script", "style"}
        and any(isinstance(c, str) and CJK.search(c) for c in node.children)
    ]
    found += [
        f"{node.tag}[{name}]={node.get(name)}"
        for node in doc.iter()
        for name in ATTRIBUTES
        if CJK.search(node.get(name) or "")
    ]
    found += [
        o.text()
        for o in doc.select("option")
        if CJK.search(o.text()) and o.get("value") != "zh-hans"
    ]
    return found


def test_the_english_ui_has_no_chinese(client, staff, channel, agent) -> None:
    """Every page in English, with English data: no Chinese wording or punctuation, including
    failure bubbles whose stored error the compaction service wrote as "中文 (English)"."""
    bare = make_agent(name="Bare")
    aux = make_channel(name="Summarizer", is_auxiliary=True)
    dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(aux.pk))
    session = make_session(owner=staff, agent=agent, title="Refactor")
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(4)]
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[1:3]],
        pruned_ids=[],
        summary_content="## Goal\nsplit main.py",
        pruned_token_estimate=0,
        event_content="上下文已压缩 · 移除 2 条消息 · 节省 50% token",
        event_payload={
            "status": "done",
            "removedCount": 2,
            "tokensBefore": 800,
            "tokensAfter": 400,
        },
    )
    for reason, error in [
        ("no_auxiliary_model", "未配置辅助模型 (no auxiliary model configured)"),
        ("oversized_message", "单条消息过长，建议拆分 (one message is too large)"),
        ("summary_too_short", "摘要异常短 (summary too short): 12 characters"),
        ("history_changed", "压缩期间历史已变化 (history changed)"),
        ("bad_request", "The model provider rejected the request (HTTP 402): No credit (HTTP 402)"),
    ]:
        system_event_append(
            session=session,
            system_type="compaction_event",
            content=f"压缩失败：{error}",
            payload={"status": "failed", "reason": reason, "error": error},
        )
    bare_session = make_session(owner=staff, agent=bare, title="Bare chat")
    summary = applied.summary_message
    client.force_login(staff)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    pages = [
        "/chat/",
        f"/chat/{session.pk}/",
        f"/chat/{session.pk}/?view=full",
        f"/chat/{bare_session.pk}/",
        f"/chat/{session.pk}/summary/{summary.pk}/",
        "/agents/",
        f"/agents/{agent.pk}/",
        f"/agents/{bare.pk}/",
        "/channels/",
        "/channels/new/",
        f"/channels/{channel.pk}/",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert _chinese_in(response.content) == [], url
    drawer = client.get(f"/chat/{session.pk}/summary/{summary.pk}/", headers={"HX-Request": "true"})
    assert _chinese_in(drawer.content) == []
    client.logout()
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert _chinese_in(client.get("/accounts/login/").content) == []
    text = _text(client.get("/accounts/login/"))
    assert "User name" in text


@pytest.mark.parametrize(
    ("language", "reason", "error", "expected"),
    [
        (
            "zh-hans",
            "no_auxiliary_model",
            "未配置辅助模型 (no auxiliary model configured)",
            "压缩失败：未配置辅助模型 可继续原对话或",
        ),
        (
            "en",
            "no_auxiliary_model",
            "未配置辅助模型 (no auxiliary model configured)",
            "Compaction failed: No auxiliary model is configured — you can continue the conversation or",
        ),
        (
            "zh-hans",
            "oversized_message",
            "单条消息过长，建议拆分 (one message is too large)",
            "压缩失败：单条消息过长，建议拆分 可继续原对话或",
        ),
        (
            "zh-hans",
            "bad_request",
            "The model provider rejected the request (HTTP 402): Insufficient balance: please top up (HTTP 402)",
            "压缩失败：模型服务商拒绝了请求（HTTP 402）：Insufficient balance: please top up 可继续原对话或",
        ),
        (
            "en",
            "bad_request",
            "The model provider rejected the request (HTTP 402): Insufficient balance: please top up (HTTP 402)",
            "Compaction failed: The model provider rejected the request (HTTP 402): Insufficient balance: please top up — you can",
        ),
        (
            "zh-hans",
            "timeout",
            "The model did not answer in time.",
            "压缩失败：模型未能及时响应 可继续原对话或",
        ),
        (
            "zh-hans",
            "connection_error",
            "The connection to the model provider failed: ConnectError",
            "压缩失败：无法连接模型服务商：ConnectError 可继续原对话或",
        ),
        (
            "zh-hans",
            "some_future_reason",
            "原样显示 as is",
            "压缩失败：原样显示 as is 可继续原对话或",
        ),
    ],
)
def test_failure_bubbles_speak_the_pages_language(
    client, user, agent, language, reason, error, expected
) -> None:
    """The seed's 「压缩失败：{error} 可继续原对话或 [开新对话]」 with {error} in the page's language
    (the reason decides it; a provider's own detail is kept as it is)."""
    session = make_session(owner=user, agent=agent)
    system_event_append(
        session=session,
        system_type="compaction_event",
        content=f"压缩失败：{error}",
        payload={"status": "failed", "reason": reason, "error": error},
    )
    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    doc = parse(client.get(f"/chat/{session.pk}/").content)
    bubble = doc.select(data_event="compaction_failed")[0]
    assert expected in " ".join(bubble.text().split())


def test_every_chinese_string_is_translated_or_deliberately_english() -> None:
    """A msgid with no zh-hans text shows English in the Chinese UI; only the protocol strings
    programs read (fill_translations.UNTRANSLATED) may stay so."""
    import importlib.util
    import re
    from pathlib import Path

    locale_dir = Path(__file__).resolve().parents[2] / "locale"
    spec = importlib.util.spec_from_file_location("fill", locale_dir / "fill_translations.py")
    assert spec is not None and spec.loader is not None
    fill = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fill)
    po = (locale_dir / "zh_Hans" / "LC_MESSAGES" / "django.po").read_text()
    entries = po.split("\n\n")[1:]  # after the header
    assert len(entries) > 200
    assert not [e for e in entries if "#, fuzzy" in e]
    untranslated = set()
    for entry in entries:
        if re.search(r'^msgstr(\[\d\])? ""$(?!\n")', entry, re.M):
            msgid = re.search(r'^msgid "(.*)"$', entry, re.M)
            untranslated.add(msgid.group(1).replace('\\"', '"') if msgid else entry)
    assert untranslated <= fill.UNTRANSLATED, untranslated - fill.UNTRANSLATED
