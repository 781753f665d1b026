"""agents.reasons: the one table of failure reasons and their messages (zh-hans, English)."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest
from django.utils import translation

from agents import reasons
from agents.reasons import REASONS, user_text, wire_text
from llm import LLMError, LLMErrorReason

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def _in(language: str, reason: str) -> str:
    with translation.override(language):
        return reasons.message(reason)


@pytest.mark.parametrize("reason", sorted(REASONS))
def test_every_reason_speaks_both_languages(reason: str) -> None:
    english, chinese = _in("en", reason), _in("zh-hans", reason)
    assert english and not CJK.search(english), english
    assert CJK.search(chinese), f"{reason} has no Chinese translation: {chinese!r}"


def test_the_model_failures_are_the_llm_packages_reasons_in_its_words() -> None:
    """``llm`` (no Django) writes the English head of its errors itself: the same words."""
    provider = typing.get_args(LLMErrorReason)
    assert reasons.codes("provider") == set(provider)
    for reason in provider:
        assert LLMError(reason).message == f"{_in('en', reason)}."


def test_wire_text_is_the_seed_language_then_english_in_any_language() -> None:
    for language in ("en", "zh-hans"):
        with translation.override(language):
            assert wire_text("no_auxiliary_model") == (
                "未配置辅助模型 (No auxiliary model is configured)"
            )
            assert wire_text("summary_too_short", "12 characters") == (
                "摘要相对于被压缩的内容异常短 (The summary came back unusually short for what it summarizes): 12 characters"
            )


def test_user_text_keeps_a_providers_status_and_words() -> None:
    error = LLMError("auth_error", status=401).message.rstrip(".") + " (HTTP 401): Bad key"
    with translation.override("zh-hans"):
        assert user_text("auth_error", error) == "模型服务商拒绝了 API Key（HTTP 401）：Bad key"
        assert user_text("no_gain", "whatever was stored") == "摘要不会减少 token"
        assert user_text("from_a_newer_server", "as it is") == "as it is"
        assert user_text(None, "as it is") == "as it is"


# Where the code names a reason: (callable name, positional index of the reason).
_REASON_ARGUMENTS = {
    "wire_text": 0,
    "AuxiliaryError": 0,
    "ProtocolError": 1,
    "ErrorEvent": 1,
    "CompactionSkipped": 1,
    "CompactionFailed": 2,
    "CompactionFailure": 0,
    "_fail": 1,
    "CompactionOutcome": 1,
}


def _named_reasons() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for package in ("agents", "compaction", "chat", "web", "channels_app"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                index = _REASON_ARGUMENTS.get(name)
                if index is None:
                    continue
                values = [k.value for k in node.keywords if k.arg == "reason"]
                if len(node.args) > index:
                    values.append(node.args[index])
                for value in values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        found.add((f"{path.relative_to(ROOT)}:{node.lineno}", value.value))
    return found


def test_every_reason_the_code_names_is_in_the_table() -> None:
    named = _named_reasons()
    assert len(named) > 15
    assert [(where, code) for where, code in sorted(named) if code not in REASONS] == []
