"""Throwaway PostgreSQL databases for the benchmarks (issue 24): a name of their own per
run, on the server ``DATABASE_URL`` names, dropped when the run ends. Fixed names
(``netaclaw_bench_*``) were dropped and re-created by every run: on a shared server that
destroys whatever anyone else keeps under that name."""

from __future__ import annotations

import atexit
import os
import re
import secrets
from contextlib import suppress

_WHAT = re.compile(r"[a-z0-9_]{1,24}")


def unique_name(what: str) -> str:
    """``netaclaw_bench_<what>_<pid>_<8 hex>``: no two runs (or processes) share one."""
    if not _WHAT.fullmatch(what):
        raise ValueError(f"not a short lower-case name: {what!r}")
    return f"netaclaw_bench_{what}_{os.getpid()}_{secrets.token_hex(4)}"


def url_with_database(url: str, name: str) -> str:
    """``url`` (a ``postgres://`` URL) naming database ``name`` on the same server."""
    return url.rsplit("/", 1)[0] + "/" + name


def create(url: str, name: str) -> str:
    """Create ``name`` on ``url``'s server (it must not exist) and drop it at exit;
    returns its URL."""
    on_server(url, f'CREATE DATABASE "{name}"')
    atexit.register(drop, url, name)
    return url_with_database(url, name)


def create_unique(url: str, what: str) -> str:
    """A new database of this run for ``what``; its URL. Dropped when the process exits."""
    return create(url, unique_name(what))


def drop(url: str, name: str) -> None:
    """Drop ``name`` (whoever is still connected); a database already gone is fine."""
    with suppress(Exception):
        on_server(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def on_server(url: str, *statements: str) -> None:
    """Run ``statements`` on ``url``'s server (its ``postgres`` database), outside any
    transaction."""
    import psycopg

    with psycopg.connect(url_with_database(url, "postgres"), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]
