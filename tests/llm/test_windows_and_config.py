"""Context windows, channel config validation, LLMError basics."""

from __future__ import annotations

import pytest

from llm import ChannelConfig, LLMError, model_max_tokens
from llm.errors import redact, to_llm_error


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("claude-3-5-haiku-latest", 200_000),
        ("gpt-4o", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o1", 200_000),
        ("o1-mini", 128_000),
        ("o3-mini", 200_000),
        ("o4-mini", 200_000),
        ("gpt-5", 272_000),  # its input limit, not the 400k total
        ("gpt-5-mini", 272_000),
        ("deepseek-chat", 128_000),
        ("deepseek-reasoner", 128_000),
        ("qwen2.5:7b", 32_768),
        ("llama3", 8_192),
        ("llama3:8b-instruct", 8_192),
        ("llama3.1:8b", 131_072),
        ("openrouter/anthropic/claude-opus-4", 200_000),
        ("GPT-4O", 128_000),
        ("some-unknown-model", 32_768),
        ("", 32_768),
    ],
)
def test_model_max_tokens_known_windows(model: str, window: int) -> None:
    assert model_max_tokens(model, None) == window


def test_model_max_tokens_override_wins() -> None:
    assert model_max_tokens("gpt-4o", 50_000) == 50_000
    assert model_max_tokens("unknown", 1_000_000) == 1_000_000


def test_model_max_tokens_ignores_non_positive_override() -> None:
    assert model_max_tokens("gpt-4o", 0) == 128_000
    assert model_max_tokens("gpt-4o", -5) == 128_000


def test_channel_config_repr_hides_api_key() -> None:
    config = ChannelConfig(provider="openai", model="gpt-4o", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(config)
    assert "sk-very-secret" not in str(config)
    assert config.api_key == "sk-very-secret"


def test_channel_config_validates() -> None:
    with pytest.raises(ValueError, match="needs a base_url"):
        ChannelConfig(provider="openai_compatible", model="llama3")
    with pytest.raises(ValueError, match="Unknown provider"):
        ChannelConfig(provider="gemini", model="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model name"):
        ChannelConfig(provider="openai", model="")


def test_llm_error_str_and_repr() -> None:
    error = LLMError("rate_limited", "Slow down", status=429)
    assert str(error) == "Slow down"
    assert repr(error) == "LLMError(reason='rate_limited', status=429, message='Slow down')"
    assert LLMError("timeout").message == "The model did not answer in time."
    with pytest.raises(ValueError, match="Unknown LLMError reason"):
        LLMError("no_model_channel")  # type: ignore[arg-type]


def test_redact() -> None:
    assert redact("key sk-1 and sk-1 again", "sk-1") == "key *** and *** again"
    assert redact("nothing", "") == "nothing"


def test_unknown_exceptions_are_not_translated() -> None:
    assert to_llm_error(ZeroDivisionError("bug")) is None
