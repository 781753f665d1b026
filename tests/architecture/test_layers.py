"""The layers, checked on the import graph (``ast``): arrows only point down.

project (netaclaw) → web / socket (channels_app) → chat → recall → compaction → domain
(agents, system) → llm, condense; beside the product, ``scripted_llm`` and ``bench`` may
import it and it never imports them. Nothing imports upwards or outside its package's list
(``tests/architecture/import_graph.py``: exact lists for ``llm`` and ``condense``), relative
imports included, and no first-party import hides inside a function to dodge a cycle
(except ``AppConfig.ready``). ``test_layer_checker.py`` plants each kind of upward import
and sees the checker refuse it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture import import_graph as graph

ROOT = graph.ROOT
MODULES = list(graph.modules())


def test_the_layers_cover_the_code() -> None:
    """Every package at the top of the repository is scanned (or is the test suite), and
    every scanned package has its list of what it may import."""
    assert len(MODULES) > 150
    assert graph.top_level_packages() == {*graph.SCANNED, "tests"}
    assert set(graph.MAY_IMPORT) == set(graph.SCANNED)
    assert {name.split(".")[0] for name, _, _ in MODULES} == set(graph.SCANNED)


@pytest.mark.parametrize(
    ("module", "is_package", "path"), MODULES, ids=[name for name, _, _ in MODULES]
)
def test_no_import_breaks_the_layers(module: str, is_package: bool, path: Path) -> None:
    assert graph.violations(path.read_text(), module=module, is_package=is_package) == []


@pytest.mark.parametrize("package", ["llm", "condense"])
def test_the_exact_lists_name_only_what_is_imported(package: str) -> None:
    """``llm`` and ``condense`` get exact lists: nothing allowed that nobody imports."""
    used = {
        allowed
        for name, _, path in MODULES
        if name.split(".")[0] == package
        for item in graph.file_imports(path)
        for allowed in graph.MAY_IMPORT[package]
        if item.target == allowed or item.target.startswith(allowed + ".")
    }
    assert used == set(graph.MAY_IMPORT[package])


@pytest.mark.parametrize("package", ["agents", "compaction", "web"])
def test_the_layers_below_the_socket_never_name_it(package: str) -> None:
    """Issue 12's check (``git grep channels_app -- agents compaction web`` prints nothing):
    not even a docstring tells the domain, compaction or the web layer where the socket lives."""
    naming = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / package).rglob("*.py"))
        if "channels_app" in path.read_text()
    ]
    assert naming == []


def test_no_test_module_imports_another_test_module() -> None:
    """Helpers two test modules share live in ``tests/support`` (or a folder's own helper
    module), so a test module can move or go without breaking another."""
    borrowing = sorted(
        f"{path.relative_to(ROOT)} → {item.target}"
        for path in (ROOT / "tests").rglob("*.py")
        for item in graph.file_imports(path)
        if item.target.startswith("tests.")
        and any(p.startswith("test_") for p in item.target.split("."))
    )
    assert borrowing == []
