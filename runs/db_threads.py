"""The worker's database threads: each job's synchronous database work runs on one of a few
threads (one connection each), instead of every job of the process sharing asgiref's single
thread-sensitive thread.

With hundreds of turns at once, that one thread serialised every query of every job, and a
turn waited behind the others' round trips to PostgreSQL (issue 24's 500-client load). A job
keeps one thread for all its work, so its queries still run in order, on one connection, as
Django's thread-bound connections and transactions want."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext

DB_THREADS = 8  # connections per worker process: well under PostgreSQL's 100 with a few workers

_threads = [
    ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"netaclaw-db{n}")
    for n in range(DB_THREADS)
]
_turns = itertools.count()


def job_context() -> ThreadSensitiveContext:
    """Enter it (``async with``) around a job: its ``database_sync_to_async`` calls, and
    those of the tasks it starts and waits for, run on the thread it was given."""
    return ThreadSensitiveContext(executor=_threads[next(_turns) % DB_THREADS])
