"""Recording a benchmark's table in BENCHMARKS.md, one section per benchmark."""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def write_section(text: str, heading: str, path: Path = BENCHMARKS) -> None:
    """Replace the section starting with ``heading`` (or append it); others stay as they are.

    Several benchmarks write the same file, each from its own run, so one must never
    rewrite another's figures.
    """
    current = path.read_text() if path.exists() else "# Benchmarks\n"
    start = current.find(heading)
    if start == -1:
        current = current.rstrip() + "\n\n" + text.rstrip() + "\n"
    else:
        end = current.find("\n## ", start + len(heading))
        rest = "" if end == -1 else "\n" + current[end:].lstrip("\n")
        current = current[:start] + text.rstrip() + "\n" + rest
    path.write_text(current)
