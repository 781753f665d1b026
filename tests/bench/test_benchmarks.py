"""The benchmarks' own machinery: the synthetic workload is what it claims, and recording
one benchmark's table never touches another's."""

from __future__ import annotations

from collections import Counter

from bench.compaction_core import measure, render, synthetic_conversation
from bench.report import write_section
from condense import is_well_paired


def test_the_synthetic_conversation_is_reproducible_well_paired_and_mixed() -> None:
    messages = synthetic_conversation(2_000)
    assert len(messages) == 2_000 and messages == synthetic_conversation(2_000)
    assert messages[0].role == "system" and is_well_paired(messages)
    roles = Counter(m.role for m in messages)
    assert roles["tool"] > 200 and roles["user"] > 200, roles
    sizes = {len(m.content) for m in messages if m.role == "tool"}
    assert min(sizes) < 200 < 5_000 < max(sizes), "short answers and long logs alike"
    assert any(not m.content.isascii() for m in messages if m.role == "user"), "Chinese turns"
    assert len({m.id for m in messages}) == len(messages)


def test_a_measured_row_is_a_real_compaction() -> None:
    row = measure(600, repeat=1)
    assert row.requests >= 1 and row.removed > 0
    assert row.tokens_after < row.tokens_before
    assert row.compress_ms > 0 and row.estimate_ms > 0 and row.peak_mib > 0
    text = render([row], "python -m bench.compaction_core")
    assert text.startswith("## Compaction core\n") and "| 600 |" in text


def test_write_section_replaces_only_its_own_section(tmp_path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\n## Chat turn\n\nold turn table\n\n## WebSocket load\n\nws\n")
    write_section("## Chat turn\n\nnew turn table\n", "## Chat turn", path)
    assert path.read_text() == (
        "# Benchmarks\n\n## Chat turn\n\nnew turn table\n\n## WebSocket load\n\nws\n"
    )
    write_section("## Compaction core\n\ncore\n", "## Compaction core", path)
    write_section("## WebSocket load\n\nws 2\n", "## WebSocket load", path)
    assert path.read_text() == (
        "# Benchmarks\n\n## Chat turn\n\nnew turn table\n\n## WebSocket load\n\nws 2\n"
        "\n## Compaction core\n\ncore\n"
    )


def test_the_sdk_request_benchmark_measures_both_paths() -> None:
    from bench import sdk_request

    rows = sdk_request.run([10], calls=2)
    ((size, create_ms, adapter_ms),) = rows
    assert size == 10 and create_ms > 0 and adapter_ms > 0
    transports = sdk_request.run_transports([3], batches=2)
    ((in_flight, ms),) = transports
    assert in_flight == 3 and ms["httpx2"] > 0 and ms["aiohttp"] > 0
    text = sdk_request.render(rows, transports, "cmd")
    assert text.startswith("## Model request overhead\n") and "| 10 |" in text
    assert "| calls in flight |" in text and "| 3 |" in text
