"""The layers, checked on the import graph (``ast``): arrows only point down.

project (netaclaw) → web / socket (channels_app) → chat → recall → compaction → domain
(agents, system) → llm, condense. Nothing imports upwards, and no first-party import hides
inside a function to dodge a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = (
    "netaclaw",
    "condense",
    "web",
    "channels_app",
    "chat",
    "recall",
    "compaction",
    "agents",
    "system",
    "llm",
)

# package → first-party packages it must never import (checked as prefixes)
NEVER = {
    "netaclaw": (),
    "llm": (
        "netaclaw",
        "web",
        "channels_app",
        "chat",
        "recall",
        "compaction",
        "agents",
        "system",
    ),
    "condense": (
        "netaclaw",
        "compaction",
        "web",
        "channels_app",
        "chat",
        "recall",
        "agents",
        "system",
        "llm",
    ),
    "agents": ("netaclaw", "web", "channels_app", "chat", "recall", "compaction"),
    "system": ("netaclaw", "web", "channels_app", "chat", "recall", "compaction", "agents"),
    "compaction": ("netaclaw", "web", "channels_app", "chat", "recall"),
    "recall": ("netaclaw", "web", "channels_app", "chat"),
    "chat": ("netaclaw", "web", "channels_app"),
    "web": ("netaclaw", "channels_app"),
    "channels_app": ("netaclaw",),
}
# the domain may use the pure core (its value types and estimates), nothing else of compaction
ALLOWED = {"agents": ("condense",), "llm": ("condense.types",)}
# Django's own convention: an app registers its system checks and signal receivers in ready()
LOCAL_IMPORT_ALLOWED = {
    ("netaclaw/apps.py", "netaclaw"),
    ("agents/apps.py", "agents"),
    ("recall/apps.py", "agents"),
    ("recall/apps.py", "recall"),
}


def _modules() -> list[tuple[str, Path]]:
    found = []
    for package in FIRST_PARTY:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            relative = path.relative_to(ROOT).with_suffix("")
            name = ".".join(relative.parts).removesuffix(".__init__")
            found.append((name, path))
    return found


def _imports(tree: ast.AST) -> list[tuple[str, ast.stmt]]:
    result: list[tuple[str, ast.stmt]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            result += [(alias.name, node) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            result.append((node.module, node))
            result += [(f"{node.module}.{alias.name}", node) for alias in node.names]
    return result


def _owner(module: str) -> str:
    """The most specific package of NEVER that ``module`` belongs to."""
    best = ""
    for package in NEVER:
        if (module == package or module.startswith(package + ".")) and len(package) > len(best):
            best = package
    return best


def _matches(target: str, prefixes: tuple[str, ...]) -> bool:
    return any(target == p or target.startswith(p + ".") for p in prefixes)


MODULES = _modules()


def test_the_layers_cover_the_code() -> None:
    assert len(MODULES) > 60
    assert all(_owner(name) for name, _ in MODULES)


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_import_points_upwards(module: str, path: Path) -> None:
    owner = _owner(module)
    tree = ast.parse(path.read_text(), filename=str(path))
    wrong = sorted(
        {
            target
            for target, _ in _imports(tree)
            if _matches(target, NEVER[owner])
            and not _matches(target, ALLOWED.get(owner, ()))
            and not _matches(target, (owner,))
        }
    )
    assert wrong == [], f"{module} ({owner}) imports upwards: {wrong}"


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_first_party_import_inside_a_function(module: str, path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    local = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    for target, _ in _imports(inner):
                        top = target.split(".")[0]
                        relative = str(path.relative_to(ROOT))
                        if top in FIRST_PARTY and (relative, top) not in LOCAL_IMPORT_ALLOWED:
                            local.append(target)
    assert local == [], f"{module} imports inside a function: {sorted(set(local))}"


def test_the_core_and_the_llm_package_import_no_django() -> None:
    for name, path in MODULES:
        if _matches(name, ("condense", "llm")):
            targets = [t for t, _ in _imports(ast.parse(path.read_text()))]
            assert not [
                t for t in targets if t.split(".")[0] in {"django", "channels", "rest_framework"}
            ], name


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
    tests_root = ROOT / "tests"
    borrowing = sorted(
        f"{path.relative_to(ROOT)} → {target}"
        for path in tests_root.rglob("*.py")
        for target, _ in _imports(ast.parse(path.read_text(), filename=str(path)))
        if target.startswith("tests.") and any(p.startswith("test_") for p in target.split("."))
    )
    assert borrowing == []
