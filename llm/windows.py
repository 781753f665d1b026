"""Context windows of known models (the seed's ``getModelMaxTokens``).

The compaction threshold is a percentage of this number, so an unknown model gets a
conservative default rather than a guess that would let the context overflow, and a
model whose input limit is below its advertised total window gets the input limit.
A channel's own ``context_window`` always wins.
"""

from __future__ import annotations

DEFAULT_CONTEXT_WINDOW = 32_768

# (prefix, window). Matched against the lower-cased model name, longest prefix first,
# so "gpt-4o" beats "gpt-4" and "o1-mini" beats "o1".
_KNOWN: tuple[tuple[str, int], ...] = (
    # Anthropic
    ("claude-instant", 100_000),
    ("claude-2.0", 100_000),
    ("claude", 200_000),
    # OpenAI
    ("gpt-5", 272_000),  # 400k total, of which at most 272k input
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo-instruct", 4_096),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    # DeepSeek (deepseek-chat was 64k until V3; V3.x and R1 serve 128k)
    ("deepseek-chat", 128_000),
    ("deepseek-reasoner", 128_000),
    ("deepseek-v3", 128_000),
    ("deepseek-r1", 128_000),
    ("deepseek-coder", 16_384),
    # Open-weight models as Ollama / vLLM / llama.cpp name them (native windows)
    ("qwen", 32_768),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3", 8_192),
    ("llama-3", 8_192),
    ("llama2", 4_096),
    ("mixtral", 32_768),
    ("mistral", 32_768),
    ("gemma3", 131_072),
    ("gemma", 8_192),
    ("phi3", 4_096),
)
_BY_LENGTH = tuple(sorted(_KNOWN, key=lambda item: len(item[0]), reverse=True))


def _base_name(model: str) -> str:
    """``"openrouter/anthropic/claude-x"`` → ``"claude-x"``; lower-cased."""
    return model.strip().lower().rsplit("/", 1)[-1]


def known_model_window(model: str) -> int | None:
    """The window of ``model`` from the table above, or None when the model is unknown
    (the pages say so rather than let the default pass for a known figure)."""
    name = _base_name(model)
    for prefix, window in _BY_LENGTH:
        if name.startswith(prefix):
            return window
    return None


def model_max_tokens(model: str, override: int | None = None) -> int:
    """The context window (tokens) of ``model``; a positive ``override`` wins."""
    if override is not None and override > 0:
        return override
    known = known_model_window(model)
    return known if known is not None else DEFAULT_CONTEXT_WINDOW
