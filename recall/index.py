"""The search index over stored messages, kept up to date by the database at write time.

Every write path (``message_append``, bulk imports, compaction write-back, the admin, a
raw ``INSERT``) is covered because the database itself maintains the index; a search
never scans the message table.

PostgreSQL: a ``tsvector`` column on ``agents_message``, kept by a trigger (the ``english``
configuration over the text with every CJK character spaced out, so a Chinese word is a
phrase of single characters; a text whose document would pass the tsvector's 1 MiB is
indexed by its longest prefix that fits), a GIN index on it, and a ``pg_trgm`` GIN index on the raw
text for substrings the word parser splits differently (paths, identifiers). SQLite: an
FTS5 table with the ``trigram`` tokenizer (substrings of any script, three characters or
more), filled by triggers on ``agents_message``, each row starting with its session's
marker so a search reads one session's part of the index.

The text of a message is its content plus each tool call's name and arguments. Summaries
and system event records are never indexed: only originals are searched.

Plain SQL, no models: ``apps.py`` imports this module to re-create the SQLite triggers
after ``migrate`` (Django rebuilds a SQLite table to alter it, which drops its triggers).
"""

from __future__ import annotations

from typing import Any

# -- PostgreSQL ------------------------------------------------------------------------

CJK_CLASS = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"

# One expression (no subquery), so PostgreSQL inlines it: the trigram index's recheck
# evaluates it per candidate row.
PG_TEXT_FUNCTION = r"""
CREATE OR REPLACE FUNCTION recall_text(content text, tool_calls jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(content, '')
    || ' ' || coalesce(jsonb_path_query_array(tool_calls, '$[*].name')::text, '')
    || ' ' || coalesce(jsonb_path_query_array(tool_calls, '$[*].arguments')::text, '')
$$
"""

# the words of a text: every CJK character a word of its own (a phrase finds a CJK word)
PG_SPACED_FUNCTION = rf"""
CREATE OR REPLACE FUNCTION recall_spaced(body text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT regexp_replace(body, '({CJK_CLASS})', ' \1 ', 'g')
$$
"""

PG_DOCUMENT_COLUMN = """
ALTER TABLE agents_message ADD COLUMN recall_document tsvector GENERATED ALWAYS AS (
  CASE WHEN is_compaction_summary OR (role = 'system' AND metadata ? 'systemType') THEN NULL
  ELSE to_tsvector('english'::regconfig, recall_spaced(recall_text(content, tool_calls)))
  END
) STORED
"""

PG_FORWARDS = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    PG_TEXT_FUNCTION,
    PG_SPACED_FUNCTION,
    PG_DOCUMENT_COLUMN,
    "CREATE INDEX recall_message_document ON agents_message USING gin (recall_document)",
    "CREATE INDEX recall_message_trigram ON agents_message "
    "USING gin (recall_text(content, tool_calls) gin_trgm_ops)",
)

PG_BACKWARDS = (
    "DROP INDEX IF EXISTS recall_message_trigram",
    "DROP INDEX IF EXISTS recall_message_document",
    "ALTER TABLE agents_message DROP COLUMN IF EXISTS recall_document",
    "DROP FUNCTION IF EXISTS recall_spaced(text)",
    "DROP FUNCTION IF EXISTS recall_text(text, jsonb)",
)

# A tsvector holds at most 1 MiB of lexemes and positions: 1 MB of distinct English words
# makes 1.46 MB, and the generated column then failed the message's INSERT — the model's
# answer, or a write_file call within the tool limits, was lost with its turn (issue 27
# item 2). The document of a longer text is that of its longest prefix that fits (within a
# quarter). Up to PG_SAFE_BYTES a text cannot overflow: a lexeme costs at most its own
# bytes plus five (alignment, count, a position), and needs at least as many bytes of text
# plus a separator — a ratio under 3, and positions past 16,383 add nothing — so only
# longer texts pay for the subtransaction of the EXCEPTION block.
PG_SAFE_BYTES = 100_000

PG_DOCUMENT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION recall_document(body text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  kept integer := length(body);
BEGIN
  IF octet_length(body) <= {PG_SAFE_BYTES} THEN
    RETURN to_tsvector('english'::regconfig, recall_spaced(body));
  END IF;
  LOOP
    BEGIN
      RETURN to_tsvector('english'::regconfig, recall_spaced(left(body, kept)));
    EXCEPTION WHEN program_limit_exceeded THEN
      kept := kept * 3 / 4;
    END;
  END LOOP;
END
$$
"""

# The document is kept by a trigger now, not a generated column: a generated column is
# computed again on every UPDATE of its row, so marking 100,000 messages compacted
# recomputed 100,000 documents; the trigger runs only when what it reads is written.
PG_DOCUMENT_TRIGGER_FUNCTION = """
CREATE OR REPLACE FUNCTION recall_document_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.recall_document := CASE
    WHEN NEW.is_compaction_summary OR (NEW.role = 'system' AND NEW.metadata ? 'systemType')
    THEN NULL
    ELSE recall_document(recall_text(NEW.content, NEW.tool_calls))
  END;
  RETURN NEW;
END
$$
"""

PG_BOUNDED_FORWARDS = (
    PG_DOCUMENT_FUNCTION,
    PG_DOCUMENT_TRIGGER_FUNCTION,
    "ALTER TABLE agents_message ALTER COLUMN recall_document DROP EXPRESSION",
    "CREATE TRIGGER recall_document BEFORE INSERT OR UPDATE OF "
    "content, tool_calls, is_compaction_summary, role, metadata ON agents_message "
    "FOR EACH ROW EXECUTE FUNCTION recall_document_row()",
)

PG_BOUNDED_BACKWARDS = (
    "DROP TRIGGER IF EXISTS recall_document ON agents_message",
    "DROP INDEX IF EXISTS recall_message_document",
    "ALTER TABLE agents_message DROP COLUMN IF EXISTS recall_document",
    "DROP FUNCTION IF EXISTS recall_document_row()",
    "DROP FUNCTION IF EXISTS recall_document(text)",
    PG_DOCUMENT_COLUMN,
    "CREATE INDEX recall_message_document ON agents_message USING gin (recall_document)",
)

# -- SQLite ----------------------------------------------------------------------------

FTS_TABLE = "recall_fts"
# A session's marker: three characters of the Supplementary Private Use Area, one per
# 16 bits of the first 48 of its id. It starts every indexed text, so a search narrows the
# index to one session's rows first (the trigram tokenizer makes it one token of its own).
MARKER_BASE = 0xF0000


def session_marker(session_hex: str) -> str:
    """The marker of a session, from its id as 32 hex digits (SQLite stores it so)."""
    return "".join(chr(MARKER_BASE + int(session_hex[i : i + 4], 16)) for i in (0, 4, 8))


def _sqlite_marker(row: str) -> str:
    """``session_marker`` in SQL, over a row's ``session_id``."""

    def digit(position: int) -> str:
        return f"(instr('0123456789abcdef', lower(substr({row}.session_id, {position}, 1))) - 1)"

    chars = []
    for start in (1, 5, 9):
        value = " + ".join(f"{digit(start + k)} * {16 ** (3 - k)}" for k in range(4))
        chars.append(f"{MARKER_BASE} + {value}")
    return f"char({', '.join(chars)})"


def _sqlite_body(row: str) -> str:
    calls = f"{row}.tool_calls"
    return (
        f"{_sqlite_marker(row)} || ' ' || {row}.content || CASE WHEN json_valid({calls}) AND json_type({calls}) = 'array' "
        "THEN coalesce((SELECT ' ' || group_concat(coalesce(json_extract(value, '$.name'), '')"
        " || ' ' || coalesce(json_extract(value, '$.arguments'), ''), ' ') "
        f"FROM json_each({calls})), '') ELSE '' END"
    )


def _sqlite_searchable(row: str) -> str:
    return (
        f"{row}.is_compaction_summary = 0 AND NOT ({row}.role = 'system' AND "
        f"json_valid({row}.metadata) AND json_type({row}.metadata, '$.systemType') IS NOT NULL)"
    )


SQLITE_TABLE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(body, tokenize='trigram')"
)

SQLITE_FILL = (
    f"INSERT INTO {FTS_TABLE}(rowid, body) SELECT m.id, {_sqlite_body('m')} "
    f"FROM agents_message AS m WHERE {_sqlite_searchable('m')}"
)

SQLITE_TRIGGERS = {
    "recall_fts_insert": (
        "CREATE TRIGGER IF NOT EXISTS recall_fts_insert AFTER INSERT ON agents_message "
        f"WHEN {_sqlite_searchable('NEW')} BEGIN "
        f"INSERT INTO {FTS_TABLE}(rowid, body) VALUES (NEW.id, {_sqlite_body('NEW')}); END"
    ),
    "recall_fts_delete": (
        "CREATE TRIGGER IF NOT EXISTS recall_fts_delete AFTER DELETE ON agents_message BEGIN "
        f"DELETE FROM {FTS_TABLE} WHERE rowid = OLD.id; END"
    ),
    "recall_fts_update": (
        "CREATE TRIGGER IF NOT EXISTS recall_fts_update AFTER UPDATE OF "
        "content, tool_calls, is_compaction_summary, role, metadata ON agents_message BEGIN "
        f"DELETE FROM {FTS_TABLE} WHERE rowid = OLD.id; "
        f"INSERT INTO {FTS_TABLE}(rowid, body) SELECT NEW.id, {_sqlite_body('NEW')} "
        f"WHERE {_sqlite_searchable('NEW')}; END"
    ),
}

SQLITE_BACKWARDS = (
    *(f"DROP TRIGGER IF EXISTS {name}" for name in SQLITE_TRIGGERS),
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
)


def create(schema_editor: Any) -> None:
    """The index for the connection's database (the migration's forwards step)."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for statement in PG_FORWARDS:
            schema_editor.execute(statement, params=None)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_TABLE, params=None)
        schema_editor.execute(SQLITE_FILL, params=None)
        for statement in SQLITE_TRIGGERS.values():
            schema_editor.execute(statement, params=None)


def drop(schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    statements = {"postgresql": PG_BACKWARDS, "sqlite": SQLITE_BACKWARDS}.get(vendor, ())
    for statement in statements:
        schema_editor.execute(statement, params=None)


def bound_documents(schema_editor: Any) -> None:
    """PostgreSQL's document kept by a trigger and bounded to what a tsvector holds (the
    second migration's forwards step); nothing to do on SQLite, whose FTS5 has no such
    limit."""
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_BOUNDED_FORWARDS:
            schema_editor.execute(statement, params=None)


def unbound_documents(schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_BOUNDED_BACKWARDS:
            schema_editor.execute(statement, params=None)


def ensure_sqlite_triggers(connection: Any) -> bool:
    """Re-create the SQLite triggers if a table rebuild dropped them; True when it did.

    Django alters a SQLite table by copying it into a new one, which drops the old one's
    triggers. The index is then filled again from the table, so rows a later migration
    wrote while the triggers were missing are found too."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (%s, %s)",
            [FTS_TABLE, "agents_message"],
        )
        if len(cursor.fetchall()) < 2:
            return False  # not migrated this far (or rolled back)
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
            ["agents_message"],
        )
        present = {row[0] for row in cursor.fetchall()}
        missing = [sql for name, sql in SQLITE_TRIGGERS.items() if name not in present]
        if not missing:
            return False
        cursor.execute(f"DELETE FROM {FTS_TABLE}")
        cursor.execute(SQLITE_FILL)
        for statement in missing:
            cursor.execute(statement)
    return True
