"""Search over one user's own chats, by title and message text (issue 26 item 2).

The same index as the agent's ``search_history`` (``recall.index``: PostgreSQL full text +
``pg_trgm``, SQLite FTS5 trigrams), scoped by the chats' owner instead of one chat: every
query joins the chat table on ``owner_id``, so a hit is never another user's. What is
found: what the user and the agent said (user and assistant messages, compacted or not);
never tool outputs, summaries or system records. Matching is recall's: every term first,
then (PostgreSQL) every term as a substring, then any term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from agents.models import ChatSession, Message, Role
from recall import index
from recall.search import (
    CANDIDATES,
    STOPWORDS,
    TRIGRAM,
    RecallError,
    _fts5_string,
    _like_pattern,
    _pg_tsquery,
    _ranked,
    query_terms,
    snippet,
)

MIN_QUERY_CHARS = 2  # one CJK character finds half the index: two at least
MAX_HITS = 30
MAX_TITLES = 10
SNIPPET_WIDTH = 160
ROLES = (Role.USER, Role.ASSISTANT)


class SearchRefused(RecallError):
    """A query too short or empty: the message says what to type."""


@dataclass(frozen=True, slots=True)
class MessageHit:
    session_id: str
    session_title: str
    message_id: int
    role: str
    snippet: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "sessionTitle": self.session_title,
            "messageId": self.message_id,
            "role": self.role,
            "snippet": self.snippet,
            "createdAt": self.created_at.isoformat(timespec="seconds"),
        }


@dataclass(frozen=True, slots=True)
class TitleHit:
    session_id: str
    title: str
    updated_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "title": self.title,
            "updatedAt": self.updated_at.isoformat(timespec="seconds"),
        }


@dataclass(frozen=True, slots=True)
class ChatSearch:
    query: str
    titles: list[TitleHit]
    messages: list[MessageHit]
    matched: str  # "all words", "all words, as substrings", "any word", "" (none)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "matched": self.matched,
            "titles": [t.to_json() for t in self.titles],
            "messages": [m.to_json() for m in self.messages],
        }


def search_chats(*, user: Any, query: str, limit: int = MAX_HITS) -> ChatSearch:
    """The user's chats whose title, and messages whose text, match ``query``."""
    text = " ".join((query or "").split())
    if len(text) < MIN_QUERY_CHARS:
        raise SearchRefused(f"type at least {MIN_QUERY_CHARS} characters")
    terms = query_terms(text)
    if not terms:
        raise SearchRefused("type a few words to search for")
    ids, matched = _passes(int(user.pk), terms, max(1, min(MAX_HITS, limit)))
    return ChatSearch(text, _titles(user, terms), _message_hits(ids, terms), matched)


def _titles(user: Any, terms: Sequence[str]) -> list[TitleHit]:
    sessions = ChatSession.objects.filter(owner=user)
    for term in terms:
        sessions = sessions.filter(title__icontains=term)
    found = sessions.order_by("-updated_at").values_list("pk", "title", "updated_at")
    return [TitleHit(str(pk), title, at) for pk, title, at in found[:MAX_TITLES]]


def _message_hits(ids: list[int], terms: Sequence[str]) -> list[MessageHit]:
    if not ids:
        return []
    rows = {
        m.pk: m
        for m in Message.objects.filter(pk__in=ids)
        .select_related("session")
        .only("pk", "role", "content", "created_at", "session__id", "session__title")
    }
    return [
        MessageHit(
            session_id=str(m.session.pk),
            session_title=m.session.title,
            message_id=m.pk,
            role=m.role,
            snippet=snippet(m.content, terms, SNIPPET_WIDTH),
            created_at=m.created_at,
        )
        for m in (rows[i] for i in ids if i in rows)
    ]


def _passes(owner_id: int, terms: list[str], limit: int) -> tuple[list[int], str]:
    narrow = [t for t in terms if t.casefold() not in STOPWORDS] or terms
    if connection.vendor == "postgresql":
        if found := _pg_full_text(owner_id, narrow, "&&"):
            return found[:limit], "all words"
        if found := _pg_substrings(owner_id, narrow):
            return found[:limit], "all words, as substrings"
        if len(narrow) > 1 and (found := _pg_full_text(owner_id, narrow, "||")):
            return found[:limit], "any word"
        return [], ""
    if connection.vendor == "sqlite":
        if found := _sqlite(owner_id, narrow, "AND"):
            return found[:limit], "all words"
        if len(narrow) > 1 and (found := _sqlite(owner_id, narrow, "OR")):
            return found[:limit], "any word"
        return [], ""
    raise RecallError(f"chat search does not support the {connection.vendor} database")


_ROLE_SQL = "m.role IN ('user', 'assistant') AND m.queued_at IS NULL AND m.fork_id IS NULL"

_PG_OWNED = (
    "FROM agents_message AS m JOIN agents_chatsession AS s ON s.id = m.session_id "
    f"WHERE s.owner_id = %s AND {_ROLE_SQL}"
)


def _pg_full_text(owner_id: int, terms: Sequence[str], operator: str) -> list[int]:
    tsquery, params = _pg_tsquery(terms, operator)
    sql = (
        f"SELECT c.id FROM (SELECT m.id, m.recall_document {_PG_OWNED} "
        f"AND m.recall_document @@ {tsquery} ORDER BY m.id DESC LIMIT %s) AS c "
        f"ORDER BY ts_rank_cd(c.recall_document, {tsquery}) DESC, c.id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [owner_id, *params, CANDIDATES, *params])
        return [row[0] for row in cursor.fetchall()]


def _pg_substrings(owner_id: int, terms: Sequence[str]) -> list[int]:
    like = " AND ".join(["recall_text(m.content, m.tool_calls) ILIKE %s"] * len(terms))
    sql = f"SELECT m.id {_PG_OWNED} AND {like} ORDER BY m.id DESC LIMIT %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [owner_id, *map(_like_pattern, terms), CANDIDATES])
        return [row[0] for row in cursor.fetchall()]


_SQLITE_OWNED = (
    f"JOIN agents_chatsession AS s ON s.id = m.session_id WHERE s.owner_id = %s AND {_ROLE_SQL}"
)
_SQLITE_SHORT = "m.content LIKE %s ESCAPE '\\'"


def _sqlite(owner_id: int, terms: Sequence[str], operator: str) -> list[int]:
    """Long terms through the trigram index, short ones (one or two characters, most
    Chinese words) as substrings of the rows it found, or alone of the user's messages;
    ranked by BM25 over the candidates (``recall.search._ranked``)."""
    long_terms = [t for t in terms if len(t) >= TRIGRAM]
    short_terms = [t for t in terms if len(t) < TRIGRAM]
    if operator == "OR":
        short_terms = []
        if not long_terms:
            return []
    counted = [p for t in terms for p in (t, t)]
    occurrences = ", ".join(
        "(length(c.b) - length(replace(c.b, lower(%s), ''))) / length(%s)" for _ in terms
    )
    if long_terms:
        match = f" {operator} ".join(map(_fts5_string, long_terms))
        source = (
            f"FROM {index.FTS_TABLE} JOIN agents_message AS m ON m.id = {index.FTS_TABLE}.rowid "
            f"{_SQLITE_OWNED} AND {index.FTS_TABLE} MATCH %s"
        )
        params: list[Any] = [owner_id, match]
    else:
        source = f"FROM agents_message AS m {_SQLITE_OWNED}"
        params = [owner_id]
    extra = "".join(f" AND {_SQLITE_SHORT}" for _ in short_terms)
    sql = (
        f"WITH c AS MATERIALIZED (SELECT m.id AS id, lower(m.content) AS b {source}{extra} "
        f"ORDER BY m.id DESC LIMIT %s) SELECT c.id, length(c.b), {occurrences} FROM c"
    )
    params += [*map(_like_pattern, short_terms), CANDIDATES, *counted]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _ranked(cursor.fetchall())
