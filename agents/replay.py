"""The replay log of a session's running answer (issue 24 item 4; CONTRACT §8 ``resume``).

A socket that joins late — a reload, a reconnect, another web process after a deploy —
asks for what was already streamed: every ``delta`` of the session's current turn (or of
one that ended less than ``REPLAY_SECONDS`` ago), by ``seq``, and the latest
``compaction_progress`` of a compaction that runs. ``agents.broadcast.apublish`` writes it
as it publishes, so the log and the live events can never disagree; a socket that resumes
joins the session's group first and reads the log second, and drops a live delta whose
``seq`` it has already sent — no gap, no duplicate.

With ``REDIS_URL`` the log is a Redis Stream per session (bounded to ``MAX_ENTRIES``,
expiring ``REPLAY_SECONDS`` after its turn ends, an hour after its last piece otherwise),
seen by every process; without it, this process's memory (``make run``: one process).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis.asyncio as redis
from django.conf import settings

from agents.events import (
    CompactionDone,
    CompactionFailed,
    CompactionProgress,
    CompactionSkipped,
    Delta,
    MessageStored,
    ServerEvent,
    TurnDone,
)

logger = logging.getLogger(__name__)

REPLAY_SECONDS = 60  # how long the log of an ended turn stays
ORPHAN_SECONDS = 3600  # a turn that never ended (its process died): dropped after this
MAX_ENTRIES = 20_000  # pieces kept per turn; an answer longer than that replays its end


@dataclass(frozen=True, slots=True)
class Replay:
    """What a resuming socket is sent first: the turn's pieces after ``after``, whether
    the turn has ended, and the latest summary progress of a compaction that runs."""

    turn_id: str = ""
    deltas: tuple[tuple[int, str], ...] = ()  # (seq, text), in order
    ended: bool = False
    interrupted: bool = False
    progress: dict[str, Any] | None = None


class ReplayStore(Protocol):
    async def record(self, session_id: str, events: Sequence[ServerEvent]) -> None: ...

    async def read(self, session_id: str, after: int) -> Replay: ...


_COMPACTION_ENDS = (CompactionDone, CompactionFailed, CompactionSkipped)


def _worth_recording(events: Sequence[ServerEvent]) -> bool:
    return any(
        isinstance(e, (CompactionProgress, *_COMPACTION_ENDS))
        or (isinstance(e, Delta | TurnDone) and e.turn_id)
        or _starts_turn(e)
        for e in events
    )


def _starts_turn(event: ServerEvent) -> bool:
    """A user's message stored unqueued: its turn starts now, so the log of the turn before
    it is over (a socket resuming before the new turn's first piece would otherwise be
    told that the old one ended, and show the running turn as idle)."""
    if not isinstance(event, MessageStored):
        return False
    return event.message.get("role") == "user" and not event.message.get("queued")


# --- in this process ------------------------------------------------------------------


@dataclass
class _Turn:
    turn_id: str
    deltas: list[tuple[int, str]] = field(default_factory=list)
    ended_at: float | None = None
    interrupted: bool = False
    touched: float = field(default_factory=time.monotonic)


class MemoryReplay:
    """One process's log (the in-memory channel layer reaches no other process either)."""

    def __init__(self) -> None:
        self._turns: dict[str, _Turn] = {}
        self._progress: dict[str, tuple[float, dict[str, Any]]] = {}

    async def record(self, session_id: str, events: Sequence[ServerEvent]) -> None:
        now = time.monotonic()
        for event in events:
            if _starts_turn(event):
                self._turns.pop(session_id, None)
            elif isinstance(event, Delta) and event.turn_id:
                turn = self._turns.get(session_id)
                if turn is None or turn.turn_id != event.turn_id:
                    turn = self._turns[session_id] = _Turn(event.turn_id)
                turn.deltas.append((event.seq, event.text))
                del turn.deltas[:-MAX_ENTRIES]
                turn.touched = now
            elif isinstance(event, TurnDone) and event.turn_id:
                turn = self._turns.setdefault(session_id, _Turn(event.turn_id))
                if turn.turn_id == event.turn_id:
                    turn.ended_at, turn.interrupted = now, event.interrupted
            elif isinstance(event, CompactionProgress):
                self._progress[session_id] = (now, event.to_json())
            elif isinstance(event, _COMPACTION_ENDS):
                self._progress.pop(session_id, None)
        self._expire(now)

    async def read(self, session_id: str, after: int) -> Replay:
        self._expire(time.monotonic())
        turn = self._turns.get(session_id)
        progress = self._progress.get(session_id)
        if turn is None:
            return Replay(progress=progress[1] if progress else None)
        return Replay(
            turn.turn_id,
            tuple(d for d in turn.deltas if d[0] > after),
            turn.ended_at is not None,
            turn.interrupted,
            progress[1] if progress else None,
        )

    def _expire(self, now: float) -> None:
        for sid, turn in list(self._turns.items()):
            ended = turn.ended_at is not None and now - turn.ended_at > REPLAY_SECONDS
            if ended or now - turn.touched > ORPHAN_SECONDS:
                del self._turns[sid]
        for sid, (at, _event) in list(self._progress.items()):
            if now - at > REPLAY_SECONDS:
                del self._progress[sid]


# --- in Redis ---------------------------------------------------------------------------


class RedisReplay:
    """Every process's log: a stream of the current turn's pieces and a small hash saying
    which turn it is and whether it ended, per session."""

    def __init__(self, url: str, prefix: str) -> None:
        self._url = url
        self._prefix = prefix
        self._clients: dict[asyncio.AbstractEventLoop, Any] = {}

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [lp for lp in self._clients if lp.is_closed()]:
                del self._clients[old]
            client = self._clients[loop] = redis.Redis.from_url(self._url)
        return client

    def _keys(self, session_id: str) -> tuple[str, str, str]:
        base = f"{self._prefix}:replay:{session_id}"
        return f"{base}:pieces", f"{base}:turn", f"{base}:progress"

    async def record(self, session_id: str, events: Sequence[ServerEvent]) -> None:
        pieces, turn, progress = self._keys(session_id)
        pipe = self._client().pipeline(transaction=False)
        for event in events:
            if _starts_turn(event):
                pipe.delete(pieces, turn)
            elif isinstance(event, Delta) and event.turn_id:
                if event.seq == 1:  # a new turn: the last one's pieces go
                    pipe.delete(pieces)
                    pipe.hset(turn, mapping={"id": event.turn_id, "ended": 0, "interrupted": 0})
                    pipe.expire(turn, ORPHAN_SECONDS)
                pipe.xadd(
                    pieces,
                    {"t": event.turn_id, "s": event.seq, "x": event.text},
                    maxlen=MAX_ENTRIES,
                    approximate=True,
                )
                if event.seq == 1:
                    pipe.expire(pieces, ORPHAN_SECONDS)
            elif isinstance(event, TurnDone) and event.turn_id:
                pipe.hset(
                    turn,
                    mapping={
                        "id": event.turn_id,
                        "ended": 1,
                        "interrupted": int(event.interrupted),
                    },
                )
                pipe.expire(turn, REPLAY_SECONDS)
                pipe.expire(pieces, REPLAY_SECONDS)
            elif isinstance(event, CompactionProgress):
                pipe.set(progress, json.dumps(event.to_json()), ex=REPLAY_SECONDS)
            elif isinstance(event, _COMPACTION_ENDS):
                pipe.delete(progress)
        await pipe.execute()

    async def read(self, session_id: str, after: int) -> Replay:
        pieces, turn, progress = self._keys(session_id)
        pipe = self._client().pipeline(transaction=False)
        pipe.hgetall(turn)
        pipe.xrange(pieces)
        pipe.get(progress)
        meta, entries, raw_progress = await pipe.execute()
        progress_event = json.loads(raw_progress) if raw_progress else None
        turn_id = (meta or {}).get(b"id", b"").decode()
        if not turn_id:
            return Replay(progress=progress_event)
        deltas = []
        for _entry_id, fields in entries:
            seq = int(fields[b"s"])
            if fields[b"t"].decode() == turn_id and seq > after:
                deltas.append((seq, fields[b"x"].decode("utf-8", "surrogatepass")))
        return Replay(
            turn_id,
            tuple(deltas),
            meta.get(b"ended") == b"1",
            meta.get(b"interrupted") == b"1",
            progress_event,
        )


_store: MemoryReplay | RedisReplay | None = None


def replay_store() -> MemoryReplay | RedisReplay:
    global _store
    if _store is None:
        url = settings.REDIS_URL
        layer: dict[str, Any] = settings.CHANNEL_LAYERS["default"]
        config: dict[str, Any] = layer.get("CONFIG") or {}
        _store = RedisReplay(url, str(config.get("prefix", "netaclaw"))) if url else MemoryReplay()
    return _store


async def record(session_id: str, events: Sequence[ServerEvent]) -> None:
    """Called by ``apublish`` before it sends: a piece is in the log before any socket can
    see it live. A failing log never fails the publish (the live events still go)."""
    if not _worth_recording(events):
        return
    try:
        await replay_store().record(session_id, events)
    except Exception:
        logger.warning("the replay log of session %s missed a write", session_id, exc_info=True)


async def read(session_id: str, after: int = 0) -> Replay:
    return await replay_store().read(session_id, after)


def events_of(session_id: str, found: Replay, after: int) -> list[ServerEvent]:
    """What a resuming socket is sent, in order: the pieces after ``after``, the turn's end
    when it has ended, the latest summary progress of a compaction that runs."""
    events: list[ServerEvent] = [
        Delta(session_id, text, found.turn_id, seq) for seq, text in found.deltas if seq > after
    ]
    if found.turn_id and found.ended:
        events.append(TurnDone(session_id, turn_id=found.turn_id, interrupted=found.interrupted))
    if found.progress is not None:
        p = found.progress
        events.append(
            CompactionProgress(session_id, str(p["text"]), int(p["chunk"]), int(p["chunks"]))
        )
    return events
