"""What a compaction dropped (issue 17, item 7): the concrete facts of the summarized
originals that reached neither the summary nor the kept context.

A fact is a number, a file path, a URL or an identifier, found with the mechanical
index's rules (``index``: its URL and path patterns, its bare file names, what tool-call
arguments name) plus two of its own: a number is a run of digits that is not part of a
word (with decimals, thousands separators, a date or time, a %, a unit of up to three
letters: ``1,000``, ``2024-01-15``, ``75%``, ``30s``), and a digit alone is too trivial to
list; an identifier is an ASCII word with a letter and a digit, an inner underscore, or a
capital after a small letter (``user_id``, ``ERR42``, ``parseConfig``, a hash).

A fact counts as kept when its text occurs anywhere in ``kept_text`` (the summary message
and every message that stays), so the list never claims a fact was lost that the model
can still read. The list is deterministic: each value once, in order of first
occurrence, with the id of the first original it occurs in. The scan stops at ``limit``
facts and after ``max_chars`` characters of originals (a fact never found is never
listed), so its cost is bounded whatever the size of the middle.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from condense.index import call_entries, is_file_name, paths_and_urls
from condense.types import Message

Kind = Literal["number", "path", "url", "identifier"]
MAX_CHARS = 4_000_000

# the characters a URL stops at (the index's URL rule): tokens never run across them
_TOKEN = re.compile(r"[^\s\"'<>()\[\]{}`\\]+")
_ESCAPE = re.compile(r"\\[nrt]")
# 42, -3.5, 1,000,000, 2024-01-15, 12:30, 75%, 30s, 16GB
_DIGITS = r"[-+]?\d+(?:[.,:-]\d+)*(?:%|[A-Za-z]{1,3}\b)?"
_NUMBER_WORD = re.compile(_DIGITS)
# a number inside other text (等待30秒), never a piece of a word or of a longer number
_NUMBER = re.compile(rf"(?<![A-Za-z0-9_.,:-]){_DIGITS}(?![A-Za-z0-9_]|[.,:-]\d)")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*")
_CAMEL = re.compile(r"[a-z][A-Z]")
_TRIM = ".,;:!?*#|~"
# what call_entries names, as a fact (commands are scanned as text instead)
_ENTRY_KINDS: dict[str, Kind] = {"file": "path", "url": "url"}


@dataclass(frozen=True, slots=True)
class DroppedFact:
    """One fact the compaction dropped, and where to read it (``message_id``)."""

    value: str
    kind: Kind
    message_id: int | None  # the first summarized original it occurs in


def _is_identifier(word: str) -> bool:
    """An ASCII word with a letter and a digit, an inner underscore, or a camel hump."""
    if len(word) < 3 or not _IDENTIFIER.fullmatch(word) or not any(c.isalpha() for c in word):
        return False
    return "_" in word.strip("_") or bool(_CAMEL.search(word)) or any(c.isdigit() for c in word)


def _is_trivial(number: str) -> bool:
    """0–9 alone (a count, a list item): too common to be worth listing."""
    return len(number.lstrip("-+")) == 1


def _token_facts(token: str) -> Iterator[tuple[Kind, str]]:
    """The facts in one whitespace- and bracket-delimited token, in their order."""
    if "/" in token:  # URLs and paths, by the index's rules
        for kind, value in paths_and_urls(token):
            yield ("url" if kind == "url" else "path"), value
        return
    for part in token.split("="):  # key=value: both sides
        yield from _part_facts(part)


def _part_facts(part: str) -> Iterator[tuple[Kind, str]]:
    """The facts of one side of a token's ``key=value`` (or of the whole token)."""
    word = part.strip(_TRIM)
    if not word or (word.isalpha() and (word.islower() or word.isupper() or word.istitle())):
        return  # a plain word (the common case, decided without a regex)
    if is_file_name(word):
        yield "path", word
    elif _NUMBER_WORD.fullmatch(word):
        if not _is_trivial(word):
            yield "number", word
    elif _is_identifier(word.lstrip("-+")):
        yield "identifier", word.lstrip("-+")
    else:
        for number in _NUMBER.findall(part):
            if not _is_trivial(number):
                yield "number", number


def _text_facts(text: str, seen: set[str]) -> Iterator[tuple[Kind, str]]:
    if "\\" in text:  # escaped code ("\\nimport os"): its escapes separate words too
        text = _ESCAPE.sub(" ", text)
    for token in _TOKEN.findall(text):
        if token not in seen:
            seen.add(token)
            yield from _token_facts(token)


def _message_facts(message: Message, seen: set[str]) -> Iterator[tuple[Kind, str, str]]:
    """(kind, value, the text it was found in) of one message: content, then tool calls."""
    for kind, value in _text_facts(message.content, seen):
        yield kind, value, message.content
    for call in message.tool_calls:
        arguments = call.arguments or ""
        for entry_kind, value in call_entries(call.name, arguments):
            named = _ENTRY_KINDS.get(entry_kind)
            if named is not None:
                yield named, value, arguments
        for kind, value in _text_facts(arguments, seen):
            yield kind, value, arguments


def context_text(messages: Sequence[Message]) -> str:
    """What a compacted context holds, as one text to look facts up in: every message's
    content, tool-call names and arguments (the summary message included)."""
    parts: list[str] = []
    for m in messages:
        parts.append(m.content)
        parts.extend(f"{call.name} {call.arguments or ''}" for call in m.tool_calls)
    return "\n".join(parts)


def dropped_facts(
    originals: Sequence[Message],
    kept_text: str,
    limit: int = 200,
    *,
    max_chars: int = MAX_CHARS,
) -> list[DroppedFact]:
    """The numbers, paths, URLs and identifiers of ``originals`` (the summarized messages,
    in order) that do not occur in ``kept_text`` (``context_text(result.messages)`` after a
    compaction): at most ``limit``, each value once, in order of first occurrence."""
    kept_tokens = set(_TOKEN.findall(kept_text))
    found: list[DroppedFact] = []
    values: set[str] = set()
    seen: set[str] = set()  # tokens already read: a repeated token adds nothing
    scanned = 0
    for message in originals:
        if len(found) >= limit or scanned >= max_chars:
            break
        scanned += len(message.content) + sum(len(c.arguments or "") for c in message.tool_calls)
        for kind, value, source in _message_facts(message, seen):
            if value in values or value not in source:  # listed, or not verbatim (clipped)
                continue
            values.add(value)
            if value in kept_tokens or value in kept_text:
                continue
            found.append(DroppedFact(value, kind, message.id))
            if len(found) >= limit:
                break
    return found
