"""Writes of the chat domain: sessions, message appends, compaction write-back (seed §5.5)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.db.models.expressions import Col
from django.utils import timezone

from agents.compiled import connection_cache
from agents.models import Agent, ChatSession, Message, Role
from compaction.core.tokens import estimate_tokens
from compaction.core.types import Message as CoreMessage
from compaction.core.types import ToolCall

SYSTEM_TYPE_COMPACTION = "compaction_event"


class SpanChanged(RuntimeError):
    """The messages a compaction planned to replace changed while it was summarizing."""


def session_create(*, owner: Any, agent: Agent, title: str = "") -> ChatSession:
    return ChatSession.objects.create(owner=owner, agent=agent, title=title[:200])


def tool_calls_to_json(tool_calls: Iterable[ToolCall]) -> list[dict[str, str]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in tool_calls]


def _estimate(role: str, content: str, tool_calls: Sequence[dict[str, str]]) -> int:
    calls = tuple(
        ToolCall(
            id=str(c.get("id", "")),
            name=str(c.get("name", "")),
            arguments=str(c.get("arguments", "")),
        )
        for c in tool_calls
    )
    return estimate_tokens(CoreMessage(role=role, content=content, tool_calls=calls))  # type: ignore[arg-type]


# The session's usage counters (DESIGN 13), as the meter reads them after an answer.
USAGE_FIELDS = (
    "last_input_tokens",
    "last_input_position",
    "total_input_tokens",
    "total_output_tokens",
    "api_calls",
    "compaction_count",
    "compaction_lease_holder",
    "compaction_lease_expires_at",
)


def _next_positions(session: ChatSession, count: int, usage: tuple[int, int] | None = None) -> int:
    """Reserve ``count`` positions under the row lock; returns the first one.

    ``usage`` (input, output tokens of the model call that produced the one message being
    stored) is recorded in the same statement, and the session object gets the counters."""
    if _can_update_returning():
        last = _reserve_returning(session, count, usage)
    else:
        ChatSession.objects.filter(pk=session.pk).update(
            last_position=F("last_position") + count, updated_at=timezone.now()
        )
        last = (
            ChatSession.objects.filter(pk=session.pk).values_list("last_position", flat=True).get()
        )
        if usage is not None:
            session_record_usage(
                session=session,
                input_tokens=usage[0],
                output_tokens=usage[1],
                input_position=last - 1,
            )
            session.refresh_from_db(fields=USAGE_FIELDS)
    session.last_position = last
    return last - count + 1


def _can_update_returning() -> bool:
    if connection.vendor == "postgresql":
        return True
    return connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 35)


def _column(model: type[Any], name: str) -> str:
    """The quoted column of a model's field, for the hand-written statements below."""
    return connection.ops.quote_name(model._meta.get_field(name).column)


# The hand-written statements' text depends only on the database and on whether usage is
# recorded: built once, not for every message (bench.ws_load: every chat turn appends two).
_STATEMENTS: dict[tuple[str, bool], tuple[str, tuple[str, ...]]] = {}
_INSERTS: dict[tuple[str, bool], tuple[str, tuple[Any, ...]]] = {}


def _reservation_sql(with_usage: bool) -> tuple[str, tuple[str, ...]]:
    """``UPDATE … RETURNING`` reserving positions (and recording usage): the SQL and the
    names of the returned columns, last position first."""
    key = (connection.vendor, with_usage)
    if key not in _STATEMENTS:

        def col(name: str) -> str:
            return _column(ChatSession, name)

        sets = [
            f"{col('last_position')} = {col('last_position')} + %s",
            f"{col('updated_at')} = %s",
        ]
        returning: tuple[str, ...] = ("last_position",)
        if with_usage:
            # every right-hand side reads the row before the update: the input position is
            # the last one before the answer
            sets += [
                f"{col('last_input_tokens')} = %s",
                f"{col('last_input_position')} = {col('last_position')}",
                f"{col('total_input_tokens')} = {col('total_input_tokens')} + %s",
                f"{col('total_output_tokens')} = {col('total_output_tokens')} + %s",
                f"{col('api_calls')} = {col('api_calls')} + 1",
            ]
            returning += USAGE_FIELDS
        _STATEMENTS[key] = (
            f"UPDATE {connection.ops.quote_name(ChatSession._meta.db_table)} "
            f"SET {', '.join(sets)} WHERE {col('id')} = %s "
            f"RETURNING {', '.join(col(name) for name in returning)}",
            returning,
        )
    return _STATEMENTS[key]


def _reservation(session: ChatSession, count: int, usage: tuple[int, int] | None):  # type: ignore[no-untyped-def]
    """The reservation statement with its parameters, and the returned columns' names."""
    sql, returning = _reservation_sql(usage is not None)
    meta = ChatSession._meta
    params: list[Any] = [
        count,
        meta.get_field("updated_at").get_db_prep_value(timezone.now(), connection),
    ]
    if usage is not None:
        params += [usage[0], usage[0], usage[1]]
    params.append(meta.pk.get_db_prep_value(session.pk, connection))
    return sql, params, returning


def _take_counters(session: ChatSession, names: Sequence[str], values: Sequence[Any]) -> None:
    """Set returned session columns on ``session``, converted as the ORM would."""
    cache = connection_cache(connection)  # backend converters hold their connection
    for name, value in zip(names, values, strict=True):
        key = (_take_counters, name)
        if key not in cache:
            column = Col(ChatSession._meta.db_table, ChatSession._meta.get_field(name))
            converters = connection.ops.get_db_converters(column)
            cache[key] = (column, converters + column.get_db_converters(connection))
        column, converters = cache[key]
        for converter in converters:
            value = converter(value, column, connection)
        setattr(session, column.target.attname, value)


def _reserve_returning(session: ChatSession, count: int, usage: tuple[int, int] | None) -> int:
    """The same in one statement (``UPDATE … RETURNING``): one round trip for every message
    stored instead of two, and for an answer one instead of four (bench.ws_load)."""
    sql, params, returning = _reservation(session, count, usage)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise ChatSession.DoesNotExist("the session is gone")
    _take_counters(session, returning[1:], row[1:])
    return int(row[0])


def _insert_sql(with_usage: bool) -> tuple[str, tuple[Any, ...]]:
    """The reserving insert's SQL and the message fields it takes as parameters, in order."""
    key = (connection.vendor, with_usage)
    if key not in _INSERTS:
        reserve_sql, returning = _reservation_sql(with_usage)
        quote = connection.ops.quote_name
        fields = [f for f in Message._meta.concrete_fields if not f.primary_key]
        values = [
            f"reserved.{_column(ChatSession, 'last_position')}" if f.name == "position" else "%s"
            for f in fields
        ]
        pk_column, position_column = _column(Message, "id"), _column(Message, "position")
        sql = (
            f"WITH reserved AS ({reserve_sql}), "
            f"inserted AS (INSERT INTO {quote(Message._meta.db_table)} "
            f"({', '.join(quote(f.column) for f in fields)}) "
            f"SELECT {', '.join(values)} FROM reserved "
            f"RETURNING {pk_column}, {position_column}) "
            f"SELECT inserted.{pk_column}, inserted.{position_column}, "
            f"{', '.join('reserved.' + _column(ChatSession, n) for n in returning)} "
            f"FROM inserted, reserved"
        )
        _INSERTS[key] = (sql, tuple(f for f in fields if f.name != "position"))
    return _INSERTS[key]


def _insert_reserving(message: Message, usage: tuple[int, int] | None) -> Message:
    """PostgreSQL: reserve the position and insert the message in one statement (a
    data-modifying CTE), so storing a message is one round trip with no BEGIN / COMMIT —
    four a message before, two of them per answer and per user message on every turn."""
    session = message.session
    _, params, returning = _reservation(session, 1, usage)
    sql, fields = _insert_sql(usage is not None)
    params += [f.get_db_prep_save(f.pre_save(message, add=True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise ChatSession.DoesNotExist("the session is gone")
    message.pk, message.position = row[0], row[1]
    _take_counters(session, returning, row[2:])
    message._state.adding = False
    message._state.db = connection.alias
    return message


def message_append(
    *,
    session: ChatSession,
    role: str,
    content: str = "",
    tool_calls: Sequence[dict[str, str]] = (),
    tool_call_id: str = "",
    metadata: dict[str, Any] | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    record_usage: bool = False,
) -> Message:
    """Store one message at the end of the session, with its token estimate.

    ``record_usage``: the message is the answer to a model call whose ``input_tokens`` and
    ``output_tokens`` the provider reported; the session's usage counters (the meter's
    starting point, DESIGN 13) are updated in the same transaction, and ``session`` carries
    their new values (``USAGE_FIELDS``)."""
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}")
    usage = None
    if record_usage:
        if input_tokens is None or output_tokens is None:
            raise ValueError("record_usage needs input_tokens and output_tokens")
        usage = (input_tokens, output_tokens)
    message = Message(
        session=session,
        role=role,
        content=content,
        tool_calls=list(tool_calls),
        tool_call_id=tool_call_id or "",
        metadata=metadata or {},
        token_estimate=_estimate(role, content, tool_calls),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )
    if connection.vendor == "postgresql":
        return _insert_reserving(message, usage)
    with transaction.atomic():
        message.position = _next_positions(session, 1, usage)
        message.save(force_insert=True)
        return message


def messages_bulk_append(*, session: ChatSession, rows: Sequence[dict[str, Any]]) -> list[Message]:
    """Append many messages in one transaction (imports); same shape as message_append."""
    with transaction.atomic():
        first = _next_positions(session, len(rows)) if rows else 0
        objs = []
        for offset, row in enumerate(rows):
            role = row["role"]
            if role not in Role.values:
                raise ValueError(f"unknown role {role!r}")
            calls = list(row.get("tool_calls") or [])
            objs.append(
                Message(
                    session=session,
                    position=first + offset,
                    role=role,
                    content=row.get("content") or "",
                    tool_calls=calls,
                    tool_call_id=row.get("tool_call_id") or "",
                    metadata=row.get("metadata") or {},
                    token_estimate=_estimate(role, row.get("content") or "", calls),
                )
            )
        return Message.objects.bulk_create(objs, batch_size=500)


def system_event_append(
    *, session: ChatSession, system_type: str, content: str, payload: dict[str, Any]
) -> Message:
    """A record of something that happened (a compaction bubble); never sent to a model."""
    return message_append(
        session=session,
        role=Role.SYSTEM,
        content=content,
        metadata={"systemType": system_type, **payload},
    )


@dataclass(frozen=True, slots=True)
class CompactionApplied:
    summary_message: Message | None
    event_message: Message
    removed_count: int


def compaction_apply(
    *,
    session: ChatSession,
    compacted_ids: Sequence[int],
    pruned_ids: Sequence[int],
    summary_content: str | None,
    pruned_token_estimate: int,
    event_content: str,
    event_payload: dict[str, Any],
    summary_metadata: dict[str, Any] | None = None,
) -> CompactionApplied:
    """Persist one compaction atomically: summary, marks, prunes and the event record.

    Re-checks that every message to replace is still visible in this session
    (DESIGN 6); if not, raises SpanChanged and writes nothing.
    """
    compacted_ids = sorted(set(compacted_ids))
    pruned_ids = sorted(set(pruned_ids) - set(compacted_ids))
    now = timezone.now()
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        visible = Message.objects.filter(
            session=locked, compacted_at__isnull=True, pk__in=[*compacted_ids, *pruned_ids]
        )
        found = dict(visible.values_list("pk", "position"))
        if len(found) != len(compacted_ids) + len(pruned_ids):
            raise SpanChanged("the history changed while the summary was being written")

        summary: Message | None = None
        if summary_content is not None:
            if not compacted_ids:
                raise ValueError("a summary must replace at least one message")
            summary = Message.objects.create(
                session=locked,
                position=min(found[i] for i in compacted_ids),
                role=Role.USER,
                content=summary_content,
                is_compaction_summary=True,
                metadata=summary_metadata or {},
                token_estimate=_estimate(Role.USER, summary_content, ()),
            )
            Message.objects.filter(pk__in=compacted_ids).update(
                compacted_at=now, compacted_into=summary
            )
        if pruned_ids:
            Message.objects.filter(pk__in=pruned_ids, pruned_at__isnull=True).update(
                pruned_at=now, token_estimate=pruned_token_estimate
            )
        event_position = _next_positions(locked, 1)
        event = Message.objects.create(
            session=locked,
            position=event_position,
            role=Role.SYSTEM,
            content=event_content,
            metadata={
                "systemType": SYSTEM_TYPE_COMPACTION,
                "summaryMessageId": summary.pk if summary else None,
                **event_payload,
            },
        )
        ChatSession.objects.filter(pk=locked.pk).update(
            compaction_count=F("compaction_count") + 1,
            consecutive_compaction_failures=0,
            last_input_tokens=None,
            last_input_position=None,
        )
    session.refresh_from_db()
    return CompactionApplied(
        summary_message=summary, event_message=event, removed_count=len(compacted_ids)
    )


def compaction_lease_acquire(*, session: ChatSession, holder: str, seconds: int) -> bool:
    """DESIGN 5: one conditional UPDATE — free or expired → mine."""
    from django.db.models import Q

    now = timezone.now()
    taken = (
        ChatSession.objects.filter(pk=session.pk)
        .filter(
            Q(compaction_lease_holder="")
            | Q(compaction_lease_expires_at__isnull=True)
            | Q(compaction_lease_expires_at__lt=now)
        )
        .update(
            compaction_lease_holder=holder,
            compaction_lease_expires_at=now + timedelta(seconds=seconds),
        )
    )
    return taken == 1


def compaction_lease_release(*, session: ChatSession, holder: str) -> None:
    ChatSession.objects.filter(pk=session.pk, compaction_lease_holder=holder).update(
        compaction_lease_holder="", compaction_lease_expires_at=None
    )


def session_record_usage(
    *, session: ChatSession, input_tokens: int, output_tokens: int, input_position: int
) -> None:
    """Remember the provider's figures for the meter (DESIGN 13)."""
    ChatSession.objects.filter(pk=session.pk).update(
        last_input_tokens=input_tokens,
        last_input_position=input_position,
        total_input_tokens=F("total_input_tokens") + input_tokens,
        total_output_tokens=F("total_output_tokens") + output_tokens,
        api_calls=F("api_calls") + 1,
    )
