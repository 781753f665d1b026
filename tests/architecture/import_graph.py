"""The import graph of the house, read with ``ast``, and the layer rules it must keep.

Shared by ``test_layers.py`` (the real tree) and ``test_layer_checker.py`` (imports planted
into source text and into a copy of the tree, which the checker must refuse). Every import
counts: ``import a.b``, ``from a import b``, relative imports (resolved against the module
that makes them), imports under ``if TYPE_CHECKING:`` or inside a function, and
``importlib.import_module("a.b")`` / ``__import__("a.b")`` with a literal name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the product, top layer first
PRODUCT = (
    "netaclaw",
    "web",
    "channels_app",
    "runs",
    "chat",
    "recall",
    "compaction",
    "agents",
    "system",
    "llm",
    "condense",
)
# beside the product: the scripted model (tests and benchmarks share it) and the benchmarks;
# they may import the product, the product never imports them
BESIDE = ("scripted_llm", "bench")
SCANNED = PRODUCT + BESIDE
FIRST_PARTY = (*SCANNED, "tests")

_BELOW_RUNS = ("chat", "recall", "compaction", "agents", "system", "llm", "condense")
_BELOW_WEB = ("runs", *_BELOW_RUNS)

# package → the first-party modules it may import besides its own (module-name prefixes:
# "condense.types" admits ``condense.types`` and names inside it, not ``condense`` itself,
# whose ``__init__`` loads the whole core). Whatever is not listed is refused, so a new
# package or an arrow nobody decided on fails until it is written down here.
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "netaclaw": PRODUCT,
    "web": _BELOW_WEB,
    # the HTML encoder renders with the page's own presentation and Markdown (web)
    "channels_app": ("web", *_BELOW_WEB),
    # where a session's work runs: the turns and compactions it hands to a runner
    "runs": _BELOW_RUNS,
    "chat": ("recall", "compaction", "agents", "system", "llm", "condense"),
    "recall": ("compaction", "agents", "system", "llm", "condense"),
    "compaction": ("agents", "system", "llm", "condense"),
    "agents": ("system", "llm", "condense"),
    "system": ("llm", "condense"),
    # exact: the provider adapters need the core's message value types, nothing else
    "llm": ("condense.types",),
    # exact: the pure core stands at the bottom and imports nothing first-party
    "condense": (),
    "scripted_llm": PRODUCT,
    "bench": (*PRODUCT, "scripted_llm"),
}

# Django's own convention: an app registers its system checks and signal receivers in
# ``AppConfig.ready()``, the one place a first-party import inside a function belongs.
READY_MODULE = "apps"
# The benchmarks configure Django (settings, database) before they import the models, so
# their first-party imports come inside the function that has set Django up.
LOCAL_IMPORTS_ALLOWED = ("bench",)

# what the pure core and the provider adapters must never load
FRAMEWORKS = ("django", "channels", "rest_framework", "daphne")
FRAMEWORK_FREE = ("condense", "llm")


@dataclass(frozen=True, slots=True)
class Import:
    target: str  # an absolute module name (or a name inside a module)
    line: int
    function: str | None  # the enclosing function, None at module level
    in_ready: bool = False  # inside an ``AppConfig.ready`` method (a class's ``ready``)


class RelativeImportError(ValueError):
    """A relative import that climbs above its top-level package."""


def module_name(path: Path, root: Path = ROOT) -> tuple[str, bool]:
    """The dotted module name of ``path`` and whether it is a package's ``__init__``."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """``from <level dots><name> import …`` inside ``module``, as an absolute name
    (``importlib.util.resolve_name``'s rule)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 >= len(package):
        raise RelativeImportError(f"{'.' * level}{name or ''} climbs above {module}")
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, name] if name else base)


_DYNAMIC = {"import_module", "__import__"}


def _dynamic_target(node: ast.Call) -> str | None:
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called not in _DYNAMIC or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.found: list[Import] = []
        self.errors: list[str] = []
        self._scopes: list[tuple[str, str]] = []  # ("class" | "function", name), outermost first

    def _add(self, target: str, node: ast.AST) -> None:
        functions = [name for kind, name in self._scopes if kind == "function"]
        in_ready = any(
            kind == "function" and name == "ready" and i > 0 and self._scopes[i - 1][0] == "class"
            for i, (kind, name) in enumerate(self._scopes)
        )
        line = getattr(node, "lineno", 0)
        self.found.append(Import(target, line, ".".join(functions) or None, in_ready))

    def _inside(self, kind: str, node: ast.AST, name: str) -> None:
        self._scopes.append((kind, name))
        self.generic_visit(node)
        self._scopes.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._inside("class", node, node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._inside("function", node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._inside("function", node, node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._inside("function", node, "<lambda>")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            try:
                base = resolve(self.module, self.is_package, node.level, node.module)
            except RelativeImportError as exc:
                self.errors.append(f"line {node.lineno}: relative import {exc}")
                return
        else:
            base = node.module or ""
        self._add(base, node)
        for alias in node.names:
            if alias.name != "*":
                self._add(f"{base}.{alias.name}", node)

    def visit_Call(self, node: ast.Call) -> None:
        target = _dynamic_target(node)
        if target is not None:
            self._add(target, node)
        self.generic_visit(node)


def imports(source: str, *, module: str, is_package: bool = False) -> list[Import]:
    """Every import of ``module``'s source, relative ones made absolute."""
    collector = _Collector(module, is_package)
    collector.visit(ast.parse(source))
    if collector.errors:
        raise RelativeImportError("; ".join(collector.errors))
    return collector.found


def file_imports(path: Path, root: Path = ROOT) -> list[Import]:
    """Every import of the module at ``path`` (under ``root``)."""
    name, is_package = module_name(path, root)
    return imports(path.read_text(), module=name, is_package=is_package)


def _top(name: str) -> str:
    return name.split(".")[0]


def _matches(target: str, prefixes: tuple[str, ...]) -> bool:
    return any(target == p or target.startswith(p + ".") for p in prefixes)


def violations(source: str, *, module: str, is_package: bool = False) -> list[str]:
    """What ``module`` (first-party, named by its dotted name) does against the layers:
    upward or undeclared first-party imports, first-party imports hidden inside a function
    (except ``AppConfig.ready``), frameworks in the pure core or the adapters, relative
    imports that climb out of their package."""
    owner = _top(module)
    try:
        found = imports(source, module=module, is_package=is_package)
    except RelativeImportError as exc:
        return [f"{module}: {exc}"]
    except SyntaxError as exc:
        return [f"{module}: does not parse ({exc.msg})"]
    wrong: list[str] = []
    allowed = (owner, *MAY_IMPORT[owner])
    for item in found:
        first_party = _top(item.target) in FIRST_PARTY
        if first_party and not _matches(item.target, allowed):
            wrong.append(f"{module} ({owner}) imports {item.target} (line {item.line})")
        if (
            first_party
            and item.function is not None
            and owner not in LOCAL_IMPORTS_ALLOWED
            and not (item.in_ready and module.split(".")[-1] == READY_MODULE)
        ):
            wrong.append(
                f"{module} imports {item.target} inside {item.function}() (line {item.line})"
            )
        if owner in FRAMEWORK_FREE and _top(item.target) in FRAMEWORKS:
            wrong.append(f"{module} ({owner}) loads {item.target} (line {item.line})")
    return sorted(set(wrong))


def modules(root: Path = ROOT) -> Iterator[tuple[str, bool, Path]]:
    """Every Python module of the scanned packages under ``root`` (migrations included)."""
    for package in SCANNED:
        for path in sorted((root / package).rglob("*.py")):
            name, is_package = module_name(path, root)
            yield name, is_package, path


def scan(root: Path = ROOT) -> dict[str, list[str]]:
    """The layer violations of every scanned module under ``root``, by module."""
    return {
        name: found
        for name, is_package, path in modules(root)
        if (found := violations(path.read_text(), module=name, is_package=is_package))
    }


def top_level_packages(root: Path = ROOT) -> set[str]:
    """The importable packages at the top of the repository."""
    return {p.parent.name for p in root.glob("*/__init__.py")}
