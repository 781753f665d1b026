"""bench.ws_load counts honestly: every way a turn can fail is an error, percentiles are
nearest-rank, and the verdict needs both the ratio and zero errors."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench.ws_load import client
from bench.ws_load.client import LevelResult
from bench.ws_load.report import percentile, pooled, render, round_ratios, verdict


class FakeSocket:
    """Replays scripted server frames; ``None`` raises like a socket closed with 1011."""

    def __init__(self, turns: list[list[dict | None]]) -> None:
        self.turns = [list(frames) for frames in turns]
        self.sent: list[dict] = []
        self.close_code: int | None = None

    async def send(self, text: str) -> None:
        self.sent.append(json.loads(text))

    async def recv(self) -> str:
        frames = self.turns[len(self.sent) - 1]
        if not frames:
            await asyncio.sleep(3600)
        frame = frames.pop(0)
        if frame is None:
            raise ConnectionError("closed 1011")
        return json.dumps(frame)


SID = "s1"
GOOD = [
    {"type": "message", "sessionId": SID, "message": {"role": "user"}},
    {"type": "delta", "sessionId": SID, "text": "ok"},
    {"type": "message", "sessionId": SID, "message": {"role": "assistant"}},
    {"type": "turn_done", "sessionId": SID},
]


def _run(socket: FakeSocket, turns: int, *, full: bool = True) -> LevelResult:
    result = LevelResult(server="netaclaw", clients=1, turns=turns)

    async def go() -> None:
        start = asyncio.Event()
        start.set()
        await client.chat(socket, SID, turns, start, result, full=full)

    asyncio.run(go())
    return result


def test_good_turns_are_timed() -> None:
    result = _run(FakeSocket([GOOD, GOOD]), 2)
    assert result.errors == 0 and len(result.done) == 2 and len(result.first_delta) == 2


@pytest.mark.parametrize(
    ("frames", "kind"),
    [
        (
            [{"type": "error", "sessionId": SID, "error": "x", "reason": "internal_error"}],
            "error event",
        ),
        ([{"type": "delta", "sessionId": SID, "text": "ok"}, None], "ConnectionError"),
        ([{"type": "turn_done", "sessionId": SID}], "no delta"),
        ([{"type": "delta", "sessionId": SID, "text": "o"}, {"type": "turn_done"}], "no answer"),
    ],
)
def test_a_failed_turn_and_the_turns_it_prevents_are_errors(frames, kind) -> None:
    result = _run(FakeSocket([frames, GOOD, GOOD]), 3)
    assert result.errors == 3 and not result.done
    assert result.error_kinds == {kind: 1, "not run": 2}


def test_a_turn_that_never_finishes_times_out(monkeypatch) -> None:
    monkeypatch.setattr(client, "TURN_TIMEOUT", 0.05)
    result = _run(FakeSocket([[GOOD[1]]]), 1)
    assert result.error_kinds == {"timeout": 1}


def test_the_bare_echo_needs_no_stored_answer() -> None:
    frames = [{"type": "delta", "sessionId": SID, "text": "ok"}, {"type": "turn_done"}]
    assert _run(FakeSocket([frames]), 1, full=False).errors == 0


def test_percentile_is_nearest_rank() -> None:
    samples = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert percentile(samples, 50) == pytest.approx(50)
    assert percentile(samples, 99) == pytest.approx(99)
    assert percentile([0.001, 0.002], 99) == pytest.approx(2)
    assert percentile([], 99) != percentile([], 99)  # NaN


def _result(server: str, clients: int, ms: float, errors: int = 0) -> LevelResult:
    r = LevelResult(server=server, clients=clients, turns=1)
    r.done = [ms / 1000] * (clients - errors)
    r.first_delta = list(r.done)
    r.errors = errors
    r.wall_seconds = 1.0
    return r


def test_the_verdict_wants_the_ratio_and_no_errors() -> None:
    levels = {
        500: {"netaclaw": _result("netaclaw", 500, 290), "echo": _result("echo", 500, 100)},
        250: {"netaclaw": _result("netaclaw", 250, 310), "echo": _result("echo", 250, 100)},
        100: {
            "netaclaw": _result("netaclaw", 100, 200, errors=1),
            "echo": _result("echo", 100, 100),
        },
    }
    assert verdict(levels, 500) == (pytest.approx(2.9), True)
    assert verdict(levels, 250)[1] is False
    assert verdict(levels, 100)[1] is False


def test_rounds_are_pooled_and_rendered() -> None:
    rounds = [_result("netaclaw", 10, 30), _result("netaclaw", 10, 60), _result("echo", 10, 20)]
    merged = {r.server: r for r in pooled(rounds)}
    assert len(merged["netaclaw"].done) == 20 and merged["netaclaw"].turns == 2
    text = render(
        [*merged.values(), _result("direct", 10, 1)],
        command="python -m bench.ws_load",
        turns=1,
        load=(0.5, 0.5, 0.5),
        repeat=2,
    )
    assert text.startswith("## WebSocket load\n") and "| 10 | 30 / 60 | 20 / 20 | 3.0× |" in text
    assert "Target (500 clients, no errors, p99 ≤ 3× the echo yardstick): not measured" in text


def test_each_rounds_ratio_and_the_cold_burst_are_reported_apart() -> None:
    rounds = []
    for number, (app_ms, echo_ms) in enumerate([(300, 100), (200, 100), (260, 100)]):
        for server, ms in (("netaclaw", app_ms), ("echo", echo_ms)):
            r = _result(server, 500, ms)
            r.round = number
            rounds.append(r)
    assert round_ratios(rounds, 500) == [3.0, 2.0, 2.6]
    warm = [_result("netaclaw", 500, 900), _result("echo", 500, 100)]
    text = render(
        pooled(rounds),
        command="python -m bench.ws_load",
        turns=1,
        load=(0.5, 0.5, 0.5),
        repeat=3,
        rounds=rounds,
        warm=warm,
    )
    assert "each round at 500 clients: 3.0×, 2.0×, 2.6× (median 2.6×)" in text
    assert "NetaClaw 900 ms, echo yardstick 100 ms (9.0×)" in text
    # the cold burst is not pooled into the verdict
    assert "**met** (3.0×)" in text
