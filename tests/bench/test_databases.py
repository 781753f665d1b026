"""Benchmark databases get names of their own (issue 24): a run never drops a database it
did not create, and drops the one it did."""

from __future__ import annotations

import os

import psycopg
import pytest
from django.db import connection

from bench import databases

pytestmark = pytest.mark.postgres


def test_every_name_is_new_and_says_what_and_whose() -> None:
    first, second = databases.unique_name("ws_load"), databases.unique_name("ws_load")
    assert first != second
    assert first.startswith(f"netaclaw_bench_ws_load_{os.getpid()}_")
    with pytest.raises(ValueError, match="not a short lower-case name"):
        databases.unique_name("x; DROP DATABASE postgres")


def _server_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/postgres"


def _exists(name: str) -> bool:
    with psycopg.connect(_server_url(), autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    return row is not None


def test_a_run_makes_its_own_database_drops_it_and_leaves_the_old_fixed_name_alone() -> None:
    url = _server_url()
    someone_elses = "netaclaw_bench_ws_load"  # the name every run used to drop
    databases.on_server(url, f'DROP DATABASE IF EXISTS "{someone_elses}"')
    databases.on_server(url, f'CREATE DATABASE "{someone_elses}"')
    try:
        made = databases.create_unique(url, "ws_load")
        name = made.rsplit("/", 1)[1]
        conn = psycopg.connect(made, autocommit=True)  # usable, still connected when dropped
        assert conn.execute("SELECT 1").fetchone() == (1,)
        databases.drop(url, name)
        with pytest.raises(psycopg.OperationalError):  # the drop ended it
            conn.execute("SELECT 1")
        conn.close()
        assert not _exists(name)
        assert _exists(someone_elses)
    finally:
        databases.drop(url, someone_elses)
