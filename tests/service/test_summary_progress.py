"""The summary, live (issue 17 item 12): ``compaction_progress`` events of one compaction —
throttled, from the compaction's thread only, the last one the summary that is kept; and a
stop cuts a streaming summary at once."""

from __future__ import annotations

import threading
import time

import pytest

from agents.events import CompactionProgress
from agents.leases import held_lease
from agents.models import CompactionRecord, Message
from compaction.progress import SummaryStream
from compaction.request import CompactionRequest
from compaction.run import compact
from condense import SummaryRequest
from scripted_llm import Reply
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _request(chunk: int = 0, chunks: int = 1, attempt: int = 0) -> SummaryRequest:
    return SummaryRequest(
        prompt="",
        max_output_tokens=100,
        language="en",
        is_update=False,
        chunk_index=chunk,
        chunk_count=chunks,
        attempt=attempt,
    )


def _stream(clock: Clock, **kw: object) -> tuple[SummaryStream, list[CompactionProgress]]:
    sent: list[CompactionProgress] = []
    return SummaryStream("s1", sent.append, clock=clock, **{"interval": 0.1, **kw}), sent  # type: ignore[arg-type]


def test_at_most_one_event_per_interval_then_the_whole_text() -> None:
    clock = Clock()
    stream, sent = _stream(clock, interval=0.25)
    write = stream.writer(_request())
    for step, piece in enumerate(["## Goal", "\nfix", " the", " parser", " today", "."]):
        clock.now = 100.0 + 0.125 * step  # two pieces per interval
        write(piece)
    assert [e.text for e in sent] == [
        "## Goal",
        "## Goal\nfix the",
        "## Goal\nfix the parser today",
    ]
    stream.finished()  # the request ended: the rest goes out at once
    assert sent[-1] == CompactionProgress("s1", "## Goal\nfix the parser today.", 1, 1)
    stream.finished()  # nothing new since: nothing more is sent
    assert len(sent) == 4


def test_a_retry_starts_its_text_over_and_reasoning_is_not_shown() -> None:
    clock = Clock()
    stream, sent = _stream(clock)
    stream.writer(_request())("<think>the user wants")
    assert sent[-1].text == ""  # an open reasoning block is no summary (the checks agree)
    clock.now += 1
    stream.writer(_request(attempt=1))("## Goal\nagain")
    assert sent[-1].text == "## Goal\nagain"


def test_parts_written_in_helper_threads_go_out_from_the_compactions_thread() -> None:
    clock = Clock()
    stream, sent = _stream(clock)
    own = stream.writer(_request(0, 3))
    helper = stream.writer(_request(1, 3))
    worker = threading.Thread(target=lambda: [helper(p) for p in ("part ", "two")])
    worker.start()
    worker.join()
    assert sent == []  # a helper thread never publishes
    own("part one")  # the owner publishes one event per interval, oldest change first
    assert [(e.chunk, e.text) for e in sent] == [(2, "part two")]
    stream.finished()
    assert [(e.chunk, e.chunks, e.text) for e in sent] == [(2, 3, "part two"), (1, 3, "part one")]


def test_check_runs_on_every_piece_and_its_exception_propagates() -> None:
    class Stop(Exception):
        pass

    stopped = threading.Event()

    def check() -> None:
        if stopped.is_set():
            raise Stop

    stream, sent = _stream(Clock(), check=check)
    write = stream.writer(_request())
    write("a")
    stopped.set()
    with pytest.raises(Stop):
        write("b")
    assert [e.text for e in sent] == ["a"]


# --- through the service, against the scripted server ---------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_stop_cuts_the_streaming_summary(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, chunk_size=4, delay_per_chunk=0.05))
    session = session_to_compact(llm_server)
    before = list(Message.objects.filter(session=session).values_list("id", "compacted_at"))
    started = time.monotonic()
    with held_lease(str(session.pk)) as lease:
        assert lease is not None
        threading.Timer(0.5, lease.stop.request).start()
        outcome = compact(CompactionRequest(str(session.pk), reason="manual"), lease=lease)
    elapsed = time.monotonic() - started
    assert outcome.status == "cancelled"
    # the answer streams for ~6 s (118 pieces, 0.05 s apart); the stop cut it mid-stream
    assert elapsed < 2.5, elapsed
    after = Message.objects.filter(session=session).exclude(metadata__has_key="systemType")
    assert sorted(after.values_list("id", "compacted_at")) == sorted(before)
    assert CompactionRecord.objects.get(session=session).status == "cancelled"
