"""Search and read a session's compacted originals (the ``search_history`` and
``read_history_message`` tools; CONTRACT §7).

What is searched: the originals a compaction took out of the model's view — messages
replaced by a summary and tool outputs pruned to a placeholder — with their tool calls
and tool outputs; never summaries or system event records, never another session's
messages. Every query goes through the index of ``recall.index``; a session is filtered
by its id, so a hit is always the caller's own.

Matching, in passes; a pass runs only when the ones before it found nothing:

1. every term (full text on PostgreSQL: stemmed English words, CJK characters in order;
   on SQLite's trigram index: substrings of three characters or more, shorter terms as
   substrings of the rows it found or, alone, of the session's indexed rows);
2. PostgreSQL only: every term as a substring (``pg_trgm``), for paths and identifiers
   the word parser splits otherwise;
3. any term.

Hits are ranked by relevance (``ts_rank_cd`` on PostgreSQL, Okapi BM25 over the candidates
on SQLite) among the newest ``CANDIDATES`` matching messages, so a very common word costs
about what a rare one does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from agents.models import ChatSession, Message, Role
from agents.storable import storable_text
from recall import index

DEFAULT_LIMIT = 8
MAX_LIMIT = 20
MAX_QUERY_CHARS = 400
MAX_TERMS = 12
CANDIDATES = 400  # newest matching messages ranked per pass
SNIPPET_CHARS = 240
PAGE_CHARS = 6000  # read_history_message: characters per page
TRIGRAM = 3  # SQLite's trigram index finds substrings of this many characters or more

# words too common to narrow an "any term" search (PostgreSQL's english config drops them
# itself; SQLite's trigram index would match them inside every other word)
STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from had has have how i if in into is it "
    "its me my of on or our so than that the their them then there these this those to was "
    "we were what when where which who why will with you your".split()
)
_EDGE_PUNCTUATION = " \t\r\n.,;:!?()[]{}<>\"'`“”‘’「」『』（）【】《》，。！？、；："
_TERM = re.compile(r'"([^"]+)"|(\S+)')


class RecallError(ValueError):
    """A request the tools refuse; the message is shown to the model."""


@dataclass(frozen=True, slots=True)
class Hit:
    id: int
    role: str
    time: str
    snippet: str
    tool: str = ""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"id": self.id, "role": self.role, "time": self.time}
        if self.tool:
            data["tool"] = self.tool
        data["snippet"] = self.snippet
        return data


@dataclass(frozen=True, slots=True)
class Page:
    id: int
    role: str
    time: str
    page: int
    pages: int
    text: str
    tool: str = ""
    compacted: bool = False

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"id": self.id, "role": self.role, "time": self.time}
        if self.tool:
            data["tool"] = self.tool
        data.update({"compacted": self.compacted, "page": self.page, "pages": self.pages})
        data["text"] = self.text
        return data


def query_terms(query: str) -> list[str]:
    """The words and "quoted phrases" of a query, trimmed of punctuation, each once; with
    NUL and lone surrogates as stored messages have them (``agents.storable``), so they
    find those and no database refuses them (a NUL ended the search with "OperationalError:
    unterminated string", issue 27 item 14)."""
    terms: list[str] = []
    seen: set[str] = set()
    for match in _TERM.finditer(storable_text(query[:MAX_QUERY_CHARS])):
        term = (match.group(1) or match.group(2)).strip(_EDGE_PUNCTUATION)
        key = term.casefold()
        if term and key not in seen:
            seen.add(key)
            terms.append(term)
    return terms[:MAX_TERMS]


def searchable(session: ChatSession) -> QuerySet[Message]:
    """The session's originals out of the model's view: compacted or pruned."""
    return (
        Message.objects.on_branch()
        .filter(session=session, is_compaction_summary=False)
        .filter(Q(compacted_at__isnull=False) | Q(pruned_at__isnull=False))
        .exclude(role=Role.SYSTEM, metadata__has_key="systemType")
    )


def message_text(message: Message) -> str:
    """A message as the index sees it: its content, then each tool call it made."""
    parts = [message.content] if message.content else []
    for call in message.tool_calls or ():
        if isinstance(call, dict):
            parts.append(f"[tool call {call.get('name', '')}] {call.get('arguments', '')}")
    return "\n".join(parts)


def _tool_name(message: Message) -> str:
    if message.role == Role.TOOL:
        return str((message.metadata or {}).get("toolName") or "")
    names = [str(c.get("name", "")) for c in message.tool_calls or () if isinstance(c, dict)]
    return ", ".join(n for n in names if n)


def _time(message: Message) -> str:
    return message.created_at.isoformat(timespec="seconds") if message.created_at else ""


def snippet(text: str, terms: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around the first place a term occurs."""
    folded = text.casefold()
    found = -1
    for term in terms:
        key = term.casefold()
        # a stemmed match ("configured" for "configure") starts with most of the term
        for probe in (key, key[: max(4, len(key) - 3)]):
            at = folded.find(probe)
            if at != -1 and (found == -1 or at < found):
                found = at
                break
    start = max(0, found - width // 3) if found != -1 else 0
    piece = text[start : start + width]
    piece = " ".join(piece.split())
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(text) else "")


# -- the passes, per database ------------------------------------------------------------

_PG_SCOPE = (
    "m.session_id = %s AND m.recall_document IS NOT NULL AND m.fork_id IS NULL "
    "AND (m.compacted_at IS NOT NULL OR m.pruned_at IS NOT NULL)"
)


def _pg_tsquery(terms: Sequence[str], operator: str) -> tuple[str, list[str]]:
    parts = ["phraseto_tsquery('english'::regconfig, recall_spaced(%s))"] * len(terms)
    return "(" + f" {operator} ".join(parts) + ")", list(terms)


def _pg_full_text(session_id: str, terms: Sequence[str], operator: str) -> list[int]:
    tsquery, params = _pg_tsquery(terms, operator)
    sql = (
        f"SELECT c.id FROM (SELECT m.id, m.recall_document FROM agents_message AS m "
        f"WHERE {_PG_SCOPE} AND m.recall_document @@ {tsquery} "
        f"ORDER BY m.id DESC LIMIT %s) AS c "
        f"ORDER BY ts_rank_cd(c.recall_document, {tsquery}) DESC, c.id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_id, *params, CANDIDATES, *params])
        return [row[0] for row in cursor.fetchall()]


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _pg_substrings(session_id: str, terms: Sequence[str]) -> list[int]:
    like = " AND ".join(["recall_text(m.content, m.tool_calls) ILIKE %s"] * len(terms))
    sql = (
        f"SELECT m.id FROM agents_message AS m WHERE {_PG_SCOPE} AND {like} "
        "ORDER BY m.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_id, *map(_like_pattern, terms), CANDIDATES])
        return [row[0] for row in cursor.fetchall()]


_SQLITE_SCOPE = (
    "m.session_id = %s AND m.is_compaction_summary = 0 AND m.fork_id IS NULL "
    "AND (m.compacted_at IS NOT NULL OR m.pruned_at IS NOT NULL) "
    "AND NOT (m.role = 'system' AND json_type(m.metadata, '$.systemType') IS NOT NULL)"
)


def _fts5_string(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _occurrences(terms: Sequence[str]) -> str:
    """SQL: how often each term occurs in ``c.b`` (a lower-cased body)."""
    return ", ".join(
        "(length(c.b) - length(replace(c.b, lower(%s), ''))) / length(%s)" for _ in terms
    )


_SHORT_TERM = "(m.content LIKE %s ESCAPE '\\' OR m.tool_calls LIKE %s ESCAPE '\\')"


def _short_terms(terms: Sequence[str]) -> list[str]:
    return [p for t in terms for p in (_like_pattern(t),) * 2]


def _sqlite_match(session_hex: str, terms: Sequence[str], operator: str) -> list[int]:
    """``operator`` AND: every term (long ones through the index, short ones as substrings
    of the rows it found); OR: any term of three characters or more. The index is read
    from the session's marker on (``recall.index``)."""
    long_terms = [t for t in terms if len(t) >= TRIGRAM]
    short_terms = [t for t in terms if len(t) < TRIGRAM] if operator == "AND" else []
    if not long_terms:
        return _sqlite_scan(session_hex, terms, operator)
    terms_match = f" {operator} ".join(map(_fts5_string, long_terms))
    match = f"{_fts5_string(index.session_marker(session_hex))} AND ({terms_match})"
    extra = "".join(f" AND {_SHORT_TERM}" for _ in short_terms)
    sql = (
        "WITH c AS MATERIALIZED (SELECT m.id AS id, lower(recall_fts.body) AS b "
        "FROM recall_fts JOIN agents_message AS m ON m.id = recall_fts.rowid "
        f"WHERE recall_fts MATCH %s AND {_SQLITE_SCOPE}{extra} "
        f"ORDER BY recall_fts.rowid DESC LIMIT %s) "
        f"SELECT c.id, length(c.b), {_occurrences(terms)} FROM c"
    )
    counted = [p for t in terms for p in (t, t)]
    params: list[Any] = [match, session_hex, *_short_terms(short_terms), CANDIDATES, *counted]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _ranked(cursor.fetchall())


def _sqlite_scan(session_hex: str, terms: Sequence[str], operator: str) -> list[int]:
    """Only terms too short for the trigram index (one or two characters): substrings of
    the session's compacted rows, read through the session's index (never the table)."""
    test = f" {operator} ".join([_SHORT_TERM] * len(terms))
    sql = (
        "WITH c AS MATERIALIZED (SELECT m.id AS id, lower(m.content) AS b "
        f"FROM agents_message AS m WHERE {_SQLITE_SCOPE} AND ({test}) "
        "ORDER BY m.id DESC LIMIT %s) "
        f"SELECT c.id, length(c.b), {_occurrences(terms)} FROM c"
    )
    counted = [p for t in terms for p in (t, t)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_hex, *_short_terms(terms), CANDIDATES, *counted])
        return _ranked(cursor.fetchall())


def _ranked(rows: Sequence[Sequence[int]], k1: float = 1.2, b: float = 0.75) -> list[int]:
    """Ids by Okapi BM25 over the candidates (``id, length, count of each term``): a term
    in fewer candidates weighs more, repeats count less and less, long texts are damped.
    FTS5's own ``bm25()`` counts each phrase over the whole index first, which on a
    trigram index costs as much as the search itself."""
    if not rows:
        return []
    n = len(rows)
    average = sum(r[1] for r in rows) / n or 1.0
    width = len(rows[0]) - 2
    idf = []
    for k in range(width):
        df = sum(1 for r in rows if r[2 + k] > 0)
        idf.append(math.log(1 + (n - df + 0.5) / (df + 0.5)))

    def score(row: Sequence[int]) -> float:
        norm = k1 * (1 - b + b * row[1] / average)
        return sum(w * tf * (k1 + 1) / (tf + norm) for w, tf in zip(idf, row[2:], strict=True))

    return [r[0] for r in sorted(rows, key=lambda r: (-score(r), -r[0]))]


def _passes(session: ChatSession, terms: list[str], limit: int) -> tuple[list[int], str]:
    """Message ids, best first, at most ``limit``, and how they matched: each pass runs
    only when the ones before it found nothing."""
    narrow = [t for t in terms if t.casefold() not in STOPWORDS] or terms
    if connection.vendor == "postgresql":
        sid = str(session.pk)
        if found := _pg_full_text(sid, narrow, "&&"):
            return found[:limit], "all words"
        if found := _pg_substrings(sid, narrow):
            return found[:limit], "all words, as substrings"
    elif connection.vendor == "sqlite":
        if found := _sqlite_match(session.pk.hex, narrow, "AND"):
            return found[:limit], "all words"
    else:
        raise RecallError(f"search_history does not support the {connection.vendor} database")
    if len(narrow) < 2:
        return [], ""
    if connection.vendor == "postgresql":
        found = _pg_full_text(str(session.pk), narrow, "||")
    else:
        found = _sqlite_match(session.pk.hex, narrow, "OR")
    return found[:limit], "any word" if found else ""


def search(*, session: ChatSession, query: str, limit: int | None = None) -> list[Hit]:
    """The session's compacted originals matching ``query``, best first."""
    return search_matched(session=session, query=query, limit=limit)[0]


def search_matched(
    *, session: ChatSession, query: str, limit: int | None = None
) -> tuple[list[Hit], str]:
    """The hits and how they matched ("all words", "all words, as substrings", "any
    word"; "" when nothing did)."""
    terms = query_terms(query or "")
    if not terms:
        raise RecallError("the query is empty: give a few words or an exact phrase")
    count = DEFAULT_LIMIT if limit is None else max(1, min(MAX_LIMIT, int(limit)))
    ids, matched = _passes(session, terms, count)
    rows = {m.pk: m for m in Message.objects.filter(session=session, pk__in=ids)} if ids else {}
    hits = [
        Hit(
            id=m.pk,
            role=m.role,
            time=_time(m),
            snippet=snippet(message_text(m), terms),
            tool=_tool_name(m),
        )
        for m in (rows[i] for i in ids if i in rows)
    ]
    return hits, matched


def search_result(*, session: ChatSession, query: str, limit: int | None = None) -> str:
    """What ``search_history`` answers: JSON with the hits, or why there are none."""
    hits, matched = search_matched(session=session, query=query, limit=limit)
    result: dict[str, object] = {"query": storable_text(query), "hits": [h.to_json() for h in hits]}
    if hits:
        result["matched"] = matched
        result["next"] = "read_history_message with an id gives that message in full"
    elif searchable(session).exists():
        result["note"] = "no compacted message matches; try other or fewer words"
    else:
        result["note"] = (
            "nothing has been compacted in this chat yet: all of it is still in your context"
        )
    return json.dumps(result, ensure_ascii=False)


def read(*, session: ChatSession, message_id: int, page: int | None = None) -> Page:
    """One message of the session in full (any message but system event records), in
    pages of ``PAGE_CHARS`` characters."""
    message = (
        Message.objects.filter(session=session, pk=message_id)
        .exclude(role=Role.SYSTEM, metadata__has_key="systemType")
        .first()
    )
    if message is None:
        raise RecallError(f"this chat has no message #{message_id}")
    text = message_text(message)
    pages = max(1, -(-len(text) // PAGE_CHARS))
    number = 1 if page is None else int(page)
    if not 1 <= number <= pages:
        raise RecallError(f"message #{message_id} has {pages} page(s); ask for 1 to {pages}")
    start = (number - 1) * PAGE_CHARS
    return Page(
        id=message.pk,
        role=message.role,
        time=_time(message),
        page=number,
        pages=pages,
        text=text[start : start + PAGE_CHARS],
        tool=_tool_name(message),
        compacted=message.compacted_at is not None or message.pruned_at is not None,
    )


def read_result(*, session: ChatSession, message_id: int, page: int | None = None) -> str:
    """What ``read_history_message`` answers: JSON with the page's text."""
    found = read(session=session, message_id=message_id, page=page)
    data = found.to_json()
    if found.page < found.pages:
        data["next"] = f"page {found.page + 1} of {found.pages}"
    return json.dumps(data, ensure_ascii=False)
