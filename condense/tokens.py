"""The seed's token estimate: len(content)//4 + 10, plus tool-call arguments //4."""

from __future__ import annotations

from collections.abc import Iterable

from condense.types import Message

MESSAGE_OVERHEAD_TOKENS = 10


def estimate_tokens(message: Message, chars_per_token: int = 4) -> int:
    n = len(message.content) // chars_per_token + MESSAGE_OVERHEAD_TOKENS
    for call in message.tool_calls:
        n += len(call.arguments or "") // chars_per_token
    return n


def estimate_messages(messages: Iterable[Message], chars_per_token: int = 4) -> int:
    return sum(estimate_tokens(m, chars_per_token) for m in messages)


def estimate_each(messages: Iterable[Message], chars_per_token: int = 4) -> list[int]:
    """``estimate_tokens`` of every message, in one pass: a compaction estimates each
    message once and reuses the figure (no call per message without tool calls)."""
    return [
        len(m.content) // chars_per_token + MESSAGE_OVERHEAD_TOKENS
        if not m.tool_calls
        else estimate_tokens(m, chars_per_token)
        for m in messages
    ]


def conservative_tokens(text: str, chars_per_token: int = 4) -> int:
    """An upper-side estimate for budgeting requests: a CJK character counts as a token.

    chars/4 undercounts Chinese 2.8–4.4×, so a request sized with it could overflow the
    auxiliary model's window (DESIGN 8: never send a request that cannot fit). The UTF-8
    length finds the wide characters in C: every character of three bytes (CJK, kana,
    Hangul, full-width forms) counts as a whole token, two-byte letters as half of one.
    """
    if text.isascii():
        return len(text) // chars_per_token + 1
    wide = (len(text.encode("utf-8", "surrogatepass")) - len(text)) // 2
    return wide + max(0, len(text) - wide) // chars_per_token + 1
