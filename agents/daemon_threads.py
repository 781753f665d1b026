"""Long sync work off the event loop, in a thread that never holds its process up.

``sync_to_async(thread_sensitive=False)`` runs work on an executor whose threads the
interpreter joins at exit: a compaction waiting 120 s on a silent model kept a process
that had been told to stop alive for as long (issue 24). Work that may take minutes runs
here instead, in a daemon thread; whoever stops it (a stop, a shutdown) sets its stop
signal, and it writes nothing after that."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import close_old_connections

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[[], T], *, name: str = "netaclaw-work") -> T:
    """``fn()`` in a daemon thread of its own, with its own database connection."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(outcome: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(outcome)  # type: ignore[arg-type]

    def target() -> None:
        outcome, error = None, None
        try:
            outcome = fn()
        except BaseException as exc:  # handed to the awaiting task
            error = exc
        finally:
            close_old_connections()
        try:
            loop.call_soon_threadsafe(settle, outcome, error)
        except RuntimeError:  # the loop has closed: nobody waits any more
            pass

    threading.Thread(target=target, name=name, daemon=True).start()
    return await done
