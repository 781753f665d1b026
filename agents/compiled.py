"""Reads whose shape never changes, compiled to SQL once per database and process.

Django builds and compiles a queryset on every evaluation. For the history read every
chat turn makes, that was most of its cost: 0.8 ms of CPU to load six rows on
PostgreSQL, on the one thread all of a process's database work shares (bench.ws_load).
Only the key changes from one call to the next, so the SQL Django generates for it is
kept, with a placeholder key, and each call runs it with the real one through
``QuerySet.raw`` (same rows, same field conversions; a test holds the two equal).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model, QuerySet

M = TypeVar("M", bound=Model)

# never a real key: marks where the key goes among the compiled parameters
_PLACEHOLDER = uuid.UUID("00000000-0000-4000-8000-00000000c0de")


class CompiledRead(Generic[M]):
    """``read(key)`` returns ``list(build(key))``, compiling ``build``'s SQL only once.

    ``build`` takes a primary-key value of ``key_model`` (a UUID: the placeholder is one)
    and returns a queryset that uses it as a plain parameter (a filter on that key);
    nothing else in it may vary."""

    def __init__(
        self, model: type[M], key_model: type[Model], build: Callable[[Any], QuerySet[M]]
    ) -> None:
        self._model = model
        self._key_field = key_model._meta.pk
        self._build = build
        self._compiled: dict[str, tuple[str, tuple[Any, ...], tuple[int, ...]]] = {}

    def __call__(self, key: Any) -> list[M]:
        alias = router.db_for_read(self._model)
        compiled = self._compiled.get(alias)
        if compiled is None:
            compiled = self._compiled[alias] = self._compile(alias)
        sql, params, slots = compiled
        value = self._key_field.get_db_prep_value(key, connections[alias])
        bound = list(params)
        for slot in slots:
            bound[slot] = value
        return list(self._model._default_manager.db_manager(alias).raw(sql, bound))

    def _compile(self, alias: str) -> tuple[str, tuple[Any, ...], tuple[int, ...]]:
        template = self._build(_PLACEHOLDER).using(alias)
        if template.model is not self._model:
            raise TypeError(f"the read builds {template.model.__name__} rows")
        sql, params = template.query.get_compiler(using=alias).as_sql()
        marker = self._key_field.get_db_prep_value(_PLACEHOLDER, connections[alias])
        slots = tuple(i for i, p in enumerate(params) if p == marker)
        if not slots:
            raise ValueError("the compiled read does not use its key as a parameter")
        return sql, tuple(params), slots
