"""Provider adapters behind one interface (the seed's ``plugins/llm_providers``).

Pure: no Django. Callers build a :class:`ChannelConfig` (``agents/llm_channels.py``
does it from a ModelChannel row), ask :func:`get_provider` for a :class:`Provider`
and either stream a chat turn or ``complete`` a one-shot request. Every failure is
an :class:`LLMError` whose ``reason`` says what happened and whose text never
contains the key.
"""

from __future__ import annotations

from .anthropic_adapter import build_anthropic_params
from .base import Provider
from .errors import LLMError, LLMErrorReason
from .factory import get_provider
from .openai_adapter import build_openai_params
from .types import (
    PROVIDERS,
    ChannelConfig,
    Completion,
    LLMRequest,
    ProviderName,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolSpec,
    UsageReport,
)
from .windows import DEFAULT_CONTEXT_WINDOW, known_model_window, model_max_tokens

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "PROVIDERS",
    "ChannelConfig",
    "Completion",
    "LLMError",
    "LLMErrorReason",
    "LLMRequest",
    "Provider",
    "ProviderName",
    "StreamEnd",
    "StreamEvent",
    "TextDelta",
    "ToolCallReady",
    "ToolSpec",
    "UsageReport",
    "build_anthropic_params",
    "build_openai_params",
    "get_provider",
    "known_model_window",
    "model_max_tokens",
]
