"""The scripted model: an LLM server speaking the real OpenAI and Anthropic wires.

Real HTTP and SSE on 127.0.0.1, driven through the official SDKs. The tests use it for
every model call (``tests/support/fixtures.py``: the ``llm_server`` fixture) and the
benchmarks as the model NetaClaw talks to (``python -m scripted_llm --responder echo``),
so it lives in a package both may import; it needs neither Django nor NetaClaw beyond
the tool-call value type. See :mod:`scripted_llm.server` for the script items.
"""

from __future__ import annotations

from condense.types import ToolCall
from scripted_llm.server import (
    RESPONDERS,
    Action,
    Disconnect,
    Empty,
    Fail,
    Hang,
    NonJSON,
    RecordedRequest,
    Reply,
    Responder,
    ScriptedLLMServer,
    StreamError,
    Wire,
    default_input_tokens,
    echo_responder,
    long_responder,
    request_text_chars,
    tool_then_answer_responder,
)

__all__ = [
    "RESPONDERS",
    "Action",
    "Disconnect",
    "Empty",
    "Fail",
    "Hang",
    "NonJSON",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ScriptedLLMServer",
    "StreamError",
    "ToolCall",
    "Wire",
    "default_input_tokens",
    "echo_responder",
    "long_responder",
    "request_text_chars",
    "tool_then_answer_responder",
]
