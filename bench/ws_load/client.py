"""The clients: connect the sockets, send the chat frames, time every turn, count every failure."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from bench.ws_load.servers import CpuClock

TURN_TIMEOUT = 60.0  # seconds one chat turn may take before it counts as an error
CONNECT_CONCURRENCY = 50  # handshakes in flight at once (Daphne's listen backlog is 50)
IDLE_SECONDS = 6.0  # idle after the turns: longer than channels-redis's 5 s blocking pop


@dataclass
class LevelResult:
    server: str
    clients: int
    turns: int
    round: int = 0
    first_delta: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    # per completed turn: (turn index, seconds from the send to each stage it reached)
    stages: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    errors: int = 0  # turns that did not complete, plus sockets the server closed
    error_kinds: dict[str, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)
    connect_seconds: float = 0.0
    wall_seconds: float = 0.0
    server_cpu_seconds: float = 0.0  # user + system
    server_sys_seconds: float = 0.0
    model_cpu_seconds: float = 0.0  # the scripted model's process, over the same turns

    def error(self, kind: str, text: str, count: int = 1) -> None:
        self.errors += count
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + count
        if len(self.error_samples) < 5:
            self.error_samples.append(f"{self.server}: {text[:400]}")


async def connect(port: int, path: str, token: str, gate: asyncio.Semaphore) -> Any:
    import websockets

    async with gate:
        return await websockets.connect(
            f"ws://127.0.0.1:{port}{path}",
            additional_headers={"Authorization": f"Token {token}"},
            open_timeout=30,
            max_size=2**22,
            ping_interval=None,  # the benchmark times frames, not keep-alives
        )


async def chat(
    ws: Any,
    session_id: str,
    turns: int,
    start: asyncio.Event,
    result: LevelResult,
    *,
    full: bool,
) -> bool:
    """Send ``turns`` chat frames one after the other; time each to its first ``delta`` and
    to its ``turn_done``. A turn counts only if it brought a delta, ``turn_done`` and (when
    ``full``) the stored answer; anything else is an error, and so is every turn the client
    could not run after one failed."""
    await start.wait()
    for turn in range(turns):
        frame = json.dumps({"type": "chat", "sessionId": session_id, "content": f"hello {turn}"})
        sent = time.perf_counter()
        first: float | None = None
        reached: dict[str, float] = {}
        answered = not full
        failure: tuple[str, str] | None = None
        seen: list[str] = []  # the events' types, for an error's sample
        last: dict[str, Any] = {}
        try:
            await ws.send(frame)
            async with asyncio.timeout(TURN_TIMEOUT):
                while True:
                    event = json.loads(await ws.recv())
                    kind = event.get("type")
                    seen.append(str(kind))
                    last = event
                    if event.get("sessionId") not in (None, session_id):
                        failure = ("foreign event", f"event for another session: {kind}")
                        break
                    if kind == "delta" and first is None:
                        first = time.perf_counter() - sent
                        reached["delta"] = first
                    elif kind == "message":
                        role = event["message"].get("role")
                        reached.setdefault(role, time.perf_counter() - sent)
                        answered = answered or role == "assistant"
                    elif kind == "error":
                        failure = (
                            "error event",
                            f"error event: {event.get('reason')}: {event.get('error')}",
                        )
                        break
                    elif kind == "turn_done":
                        break
        except TimeoutError:
            failure = ("timeout", f"turn {turn}: no turn_done after {TURN_TIMEOUT:.0f}s")
        except Exception as exc:  # a closed socket (1011…), a bad frame: counted, not fatal
            code = getattr(getattr(exc, "rcvd", None), "code", None)
            failure = (f"closed {code}" if code else type(exc).__name__, f"{exc!r}")
        if failure is None and first is None:
            failure = (
                "no delta",
                f"turn {turn}: turn_done without any delta (saw {', '.join(seen)}; {last})",
            )
        if failure is None and not answered:
            failure = ("no answer", f"turn {turn}: turn_done without the stored answer")
        if failure is not None:
            kind, text = failure
            result.error(kind, text)
            if turns - turn - 1:
                result.error("not run", "turns left after a failed one", turns - turn - 1)
            return False
        assert first is not None
        result.first_delta.append(first)
        result.done.append(reached.setdefault("turn_done", time.perf_counter() - sent))
        result.stages.append((turn, reached))
    return True


async def run_level(
    server: str,
    port: int,
    pairs: list[tuple[str, str]],
    turns: int,
    *,
    path: str = "/ws/chat/",
    full: bool = True,
    pids: tuple[int, ...] = (),
    idle: float = 0.0,
    model_pid: int | None = None,
) -> LevelResult:
    """One level: connect every client, then all chat at once; then (``idle``) keep the
    sockets open and idle for a while and count every one the server closed. The CPU time
    of the server (``pid``) and of the scripted model (``model_pid``) is taken over the turns."""
    result = LevelResult(server=server, clients=len(pairs), turns=turns)
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    began = time.perf_counter()
    opened = await asyncio.gather(
        *(connect(port, path, token, gate) for token, _ in pairs), return_exceptions=True
    )
    result.connect_seconds = time.perf_counter() - began
    start = asyncio.Event()
    tasks: list[tuple[Any, asyncio.Task[bool]]] = []
    for ws, (_, sid) in zip(opened, pairs, strict=True):
        if isinstance(ws, BaseException):
            result.error("connect", f"connect: {type(ws).__name__}: {ws}", turns)
            continue
        task = asyncio.create_task(chat(ws, sid, turns, start, result, full=full))
        tasks.append((ws, task))
    server_cpu, model_cpu = CpuClock(*pids), CpuClock(model_pid)
    began = time.perf_counter()
    start.set()
    try:
        async with asyncio.timeout(TURN_TIMEOUT * turns + 30):
            await asyncio.gather(*(task for _, task in tasks))
    except TimeoutError:
        for _, task in tasks:
            task.cancel()
        missing = turns * result.clients - len(result.done) - result.errors
        result.error("level timeout", "the level did not finish in time", max(missing, 0))
    result.wall_seconds = time.perf_counter() - began
    if pids:
        user, system = server_cpu.spent()
        result.server_cpu_seconds = user + system
        result.server_sys_seconds = system
    if model_pid:
        result.model_cpu_seconds = sum(model_cpu.spent())
    if idle:
        await asyncio.sleep(idle)
    for ws, task in tasks:  # a socket closed after its turns (idle, 1011) is an error too
        done_ok = task.done() and not task.cancelled() and task.result()
        if done_ok and ws.close_code is not None:
            result.error(
                f"closed {ws.close_code}", f"server closed an idle socket: {ws.close_code}"
            )
    await asyncio.gather(*(ws.close() for ws, _ in tasks), return_exceptions=True)
    return result
