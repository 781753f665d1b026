"""Values the provider adapters take and give back.

Pure frozen dataclasses (no Django, no SDK types), so the runtime, the auxiliary
summarizer and the tests speak about LLM calls in one vocabulary whatever the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from condense.types import Message, ToolCall

ProviderName = Literal["anthropic", "openai", "deepseek", "openai_compatible"]
PROVIDERS: tuple[ProviderName, ...] = ("anthropic", "openai", "deepseek", "openai_compatible")


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    """How to reach one model: what a model channel row says, minus Django.

    ``api_key`` is kept out of ``repr`` so a config can be logged or shown in a
    traceback without leaking the key.
    """

    provider: ProviderName
    model: str
    api_key: str = field(default="", repr=False)
    base_url: str | None = None
    context_window: int | None = None
    timeout_seconds: float = 60.0
    max_retries: int = 1

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"Unknown provider {self.provider!r}; expected one of {PROVIDERS}.")
        if not self.model:
            raise ValueError("A model channel needs a model name.")
        if self.provider == "openai_compatible" and not self.base_url:
            raise ValueError("An openai_compatible channel needs a base_url.")
        if self.timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive.")
        if self.max_retries < 0:
            raise ValueError("max_retries must not be negative.")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call; ``parameters`` is its JSON schema (an object schema)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}, hash=False
    )


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One call to a model.

    ``temperature=None`` means the provider's default. There is deliberately no
    "thinking" switch: no adapter ever asks for extended reasoning (the seed keeps it
    off, and reasoning blocks would have to be stored and replayed verbatim).
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096
    temperature: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1.")


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of assistant text, as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """A tool call whose arguments have been fully assembled."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Tokens the provider says the call used (input includes cached input)."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """Always the last event of a successful stream.

    ``stop_reason`` is normalised across wires: ``end_turn``, ``tool_use``,
    ``max_tokens``, or the provider's own word for anything else
    (``refusal``, ``content_filter``, ``stop_sequence``…).
    """

    stop_reason: str


StreamEvent = TextDelta | ToolCallReady | UsageReport | StreamEnd


@dataclass(frozen=True, slots=True)
class Completion:
    """A whole (non-streamed or collected) answer."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: UsageReport | None = None
    stop_reason: str = "end_turn"
