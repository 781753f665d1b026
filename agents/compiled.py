"""Reads whose shape never changes, compiled to SQL once per database connection.

Django builds and compiles a queryset on every evaluation. For the reads every chat turn
makes — the access check with the session's agent and channel, the history — that was most
of their cost (1.2 ms of CPU for the access check's one row on PostgreSQL), on the one
thread all of a process's database work shares (bench.ws_load). Only the keys change from
one call to the next, so the compiler Django builds for the queryset is kept after its
first compilation, with placeholder keys, and each call runs its SQL with the real ones and
turns the rows into model instances the way ``ModelIterable`` does: the same field
conversions, ``select_related`` objects included (a test holds the two equal).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators
from django.db.models.sql.compiler import SQLCompiler

M = TypeVar("M", bound=Model)

_INTEGER_TYPES = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "SmallAutoField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveBigIntegerField",
        "PositiveSmallIntegerField",
    }
)


def _placeholder(field: Field, index: int) -> Any:
    """A key value no row has: marks where key ``index`` goes among the parameters."""
    target = field.target_field if field.is_relation else field
    kind = target.get_internal_type()
    if kind == "UUIDField":
        return uuid.UUID(f"00000000-0000-4000-8000-{0xC0DE00 + index:012x}")
    if kind in _INTEGER_TYPES:
        return -2_147_000_000 - index
    raise TypeError(f"a compiled read's keys are UUIDs or integers, not {kind}")


@dataclass(frozen=True, slots=True)
class _Compiled:
    compiler: SQLCompiler
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, ...], ...]  # per key, where it goes among the parameters
    model: type[Model]
    init_list: tuple[str, ...]
    fields: slice  # the model's own columns in a row
    populators: tuple[Any, ...]  # the select_related objects, filled from the same row
    annotations: tuple[tuple[str, int], ...]
    converters: dict[int, Any]  # the columns' from-database conversions, by position


_CACHE = "_netaclaw_cache"  # on each connection wrapper: what was built for it


def connection_cache(connection: BaseDatabaseWrapper) -> dict[Any, Any]:
    """A dict that lives and dies with ``connection``, for what is built for it once.

    Compilers and backend converters hold their connection, so a cache outside would keep
    every thread's connection alive (and open) after the thread ended — asgiref runs each
    request's sync code in a thread of its own."""
    cache = getattr(connection, _CACHE, None)  # through django.db.connection too
    if cache is None:
        cache = {}
        setattr(connection, _CACHE, cache)
    return cache


class CompiledRead(Generic[M]):
    """``read(*keys)`` returns ``list(build(*keys))``, compiling ``build``'s SQL only once
    per connection (a thread's own; compilers are not shared between threads).

    ``key_fields``: the field each key is a value of (a UUID or an integer key, or a foreign
    key to one); ``build`` must use each key as a plain parameter (a filter on it), and
    nothing else in it may vary. Model rows only: no ``values()``, ``prefetch_related``
    or ``only()``."""

    def __init__(
        self, model: type[M], build: Callable[..., QuerySet[M]], *key_fields: Field
    ) -> None:
        if not key_fields:
            raise TypeError("a compiled read needs at least one key field")
        self._model = model
        self._build = build
        self._key_fields = key_fields
        self._placeholders = tuple(_placeholder(f, i) for i, f in enumerate(key_fields))
        self.compilations = 0  # for tests and diagnostics

    def __call__(self, *keys: Any) -> list[M]:
        if len(keys) != len(self._key_fields):
            raise TypeError(f"expected {len(self._key_fields)} keys, got {len(keys)}")
        alias = router.db_for_read(self._model)
        connection = connections[alias]
        cache = connection_cache(connection)
        compiled = cache.get(self)
        if compiled is None:
            compiled = cache[self] = self._compile(alias, connection)
        bound = list(compiled.params)
        for field, value, slots in zip(self._key_fields, keys, compiled.slots, strict=True):
            prepared = field.get_db_prep_value(value, connection)
            for slot in slots:
                bound[slot] = prepared
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, bound)
            rows = cursor.fetchall()
        if not rows:
            return []
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        return [self._instance(compiled, alias, row) for row in rows]

    @staticmethod
    def _instance(compiled: _Compiled, alias: str, row: Any) -> Any:
        obj = compiled.model.from_db(alias, compiled.init_list, row[compiled.fields])
        for populator in compiled.populators:
            populator.populate(row, obj)
        for name, position in compiled.annotations:
            setattr(obj, name, row[position])
        return obj

    def _compile(self, alias: str, connection: BaseDatabaseWrapper) -> _Compiled:
        template = self._build(*self._placeholders).using(alias)
        if template.model is not self._model:
            raise TypeError(f"the read builds {template.model.__name__} rows")
        if (
            template._iterable_class is not ModelIterable
            or template._prefetch_related_lookups
            or template._known_related_objects
            or template.query.deferred_loading[0]
        ):
            raise TypeError("a compiled read returns whole model rows, nothing prefetched")
        self.compilations += 1
        compiler = template.query.get_compiler(using=alias, connection=connection)
        sql, params = compiler.as_sql()
        slots = []
        for field, placeholder in zip(self._key_fields, self._placeholders, strict=True):
            marker = field.get_db_prep_value(placeholder, connection)
            found = tuple(i for i, p in enumerate(params) if p == marker)
            if not found:
                raise ValueError(f"the compiled read does not use its key {field.name!r}")
            slots.append(found)
        columns = [column[0] for column in compiler.select[: compiler.col_count]]
        if compiler.has_composite_fields(columns):
            raise TypeError("a compiled read does not read composite keys")
        info = compiler.klass_info
        start, end = info["select_fields"][0], info["select_fields"][-1] + 1
        return _Compiled(
            compiler=compiler,
            sql=sql,
            params=tuple(params),
            slots=tuple(slots),
            model=info["model"],
            init_list=tuple(f[0].target.attname for f in compiler.select[start:end]),
            fields=slice(start, end),
            populators=tuple(get_related_populators(info, compiler.select, alias)),
            annotations=tuple(compiler.annotation_col_map.items()),
            converters=compiler.get_converters(columns),
        )
