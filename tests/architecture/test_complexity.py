"""No function grows past what a reader can hold: radon's cyclomatic complexity and length.

Every function and method of the listed packages (nested ones included, each on its own:
radon does not add a closure's branches to the function around it) must stay at or under
``MAX_COMPLEXITY`` (radon grade C) and ``MAX_LINES`` lines, ``def`` to last line. A
function that grows past either is split where its concepts part, not waved through here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from radon.visitors import ComplexityVisitor

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["condense", "compaction", "chat"]
MAX_COMPLEXITY = 15
MAX_LINES = 60

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.AST) -> Iterator[FunctionNode]:
    """Every function of a module: top-level, methods, and functions inside functions."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _complexity(node: FunctionNode) -> int:
    """radon's cyclomatic complexity of one function (``radon cc`` reports the same)."""
    (block,) = ComplexityVisitor.from_ast(node).functions
    return int(block.complexity)


def offenders(package: str) -> list[str]:
    """``path:line name: complexity N, M lines`` for each function over a limit."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in _functions(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            complexity = _complexity(node)
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if complexity > MAX_COMPLEXITY or lines > MAX_LINES:
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.append(f"{where} {node.name}: complexity {complexity}, {lines} lines")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_too_complex_or_too_long(package: str) -> None:
    found = offenders(package)
    assert not found, (
        f"over complexity {MAX_COMPLEXITY} or {MAX_LINES} lines in {package}/:\n" + "\n".join(found)
    )
