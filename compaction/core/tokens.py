"""The seed's token estimate: len(content)//4 + 10, plus tool-call arguments //4."""

from __future__ import annotations

import re
from collections.abc import Iterable

from compaction.core.types import Message

MESSAGE_OVERHEAD_TOKENS = 10


def estimate_tokens(message: Message, chars_per_token: int = 4) -> int:
    n = len(message.content) // chars_per_token + MESSAGE_OVERHEAD_TOKENS
    for call in message.tool_calls:
        n += len(call.arguments or "") // chars_per_token
    return n


def estimate_messages(messages: Iterable[Message], chars_per_token: int = 4) -> int:
    return sum(estimate_tokens(m, chars_per_token) for m in messages)


# CJK ideographs and radicals, Hangul, compatibility ideographs, full-width forms.
_WIDE = re.compile("[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def conservative_tokens(text: str, chars_per_token: int = 4) -> int:
    """An upper-side estimate for budgeting requests: CJK characters count as one token each.

    chars/4 undercounts Chinese 2.8–4.4×, so a request sized with it could overflow the
    auxiliary model's window (DESIGN 8: never send a request that cannot fit).
    """
    wide = 0 if text.isascii() else len(_WIDE.findall(text))
    return wide + (len(text) - wide) // chars_per_token + 1
