"""The layer checker refuses every kind of upward import: planted into source text fed to it,
and into a copy of the tree it scans.

Before issue 23 an ``import`` of ``compaction.records`` into ``llm/collect.py`` pulled
Django into ``llm`` and every architecture test still passed: ``llm`` could import any
``compaction.*`` but ``service``, relative imports were skipped, and ``scripted_llm/`` and
``bench/`` were not scanned.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from tests.architecture import import_graph as graph


def _check(module: str, source: str, *, is_package: bool = False) -> list[str]:
    return graph.violations(textwrap.dedent(source), module=module, is_package=is_package)


def _cases(
    table: dict[str, tuple[str, str] | tuple[str, str, bool]],
) -> list[tuple[str, str, bool]]:
    """(module, source, is_package): a case names a package's ``__init__`` with a third True."""
    return [(case[0], case[1], len(case) > 2 and bool(case[2])) for case in table.values()]


UPWARD: dict[str, tuple[str, str] | tuple[str, str, bool]] = {
    "absolute import": ("agents.services", "import chat.turn\n"),
    "absolute import, aliased": ("compaction.trigger", "import web.api as api\n"),
    "from x import y": ("recall.search", "from chat import turn\n"),
    "from x.y import z": ("system.dictionary", "from agents.models import Agent\n"),
    "llm → compaction.records": (
        "llm.collect",
        "from compaction.records import CompactionAudit\n",
    ),
    "llm → compaction (from the package)": ("llm.collect", "from compaction import records\n"),
    "llm → agents": ("llm.types", "import agents.models\n"),
    "llm → the core's package": ("llm.types", "from condense import types\n"),
    "llm → another core module": ("llm.collect", "from condense.tokens import estimate\n"),
    "llm → the core's __init__": ("llm.collect", "import condense\n"),
    "condense → compaction": ("condense.compressor", "from compaction import context\n"),
    "condense → agents": ("condense.types", "import agents.models\n"),
    "condense → llm": ("condense.summarizing", "from llm.types import LLMRequest\n"),
    "under TYPE_CHECKING": (
        "llm.base",
        """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from agents.models import ModelChannel
        """,
    ),
    "importlib.import_module": (
        "llm.factory",
        "import importlib\nrecords = importlib.import_module('compaction.records')\n",
    ),
    "__import__": ("condense.tokens", "agents = __import__('agents.models')\n"),
    "relative import beyond the package": ("llm.collect", "from ..compaction import records\n"),
    "relative import beyond a package's __init__": ("llm", "from .. import compaction\n", True),
    "web → the socket layer": ("web.views", "from channels_app import consumers\n"),
    "the product → scripted_llm": ("chat.turn", "from scripted_llm import ScriptedLLMServer\n"),
    "the product → bench": ("netaclaw.urls", "from bench.report import write_section\n"),
    "the product → the tests": ("agents.models", "from tests.factories import make_user\n"),
    "scripted_llm → bench": ("scripted_llm.server", "from bench import report\n"),
    "scripted_llm → the tests": ("scripted_llm.ports", "import tests.conftest\n"),
    "bench → the tests": ("bench.chat_turn", "from tests.factories import make_session\n"),
    "bench, relative → the tests": ("bench.ws_load.cli", "from ...tests import factories\n"),
}


@pytest.mark.parametrize(("module", "source", "is_package"), _cases(UPWARD), ids=UPWARD.keys())
def test_an_upward_import_is_refused(module: str, source: str, is_package: bool) -> None:
    assert _check(module, source, is_package=is_package) != []


INSIDE_A_FUNCTION = {
    "absolute": ("compaction.service", "def f():\n    from agents import services\n"),
    "relative": ("llm.collect", "def f():\n    from .types import Completion\n"),
    "in a method": (
        "chat.turn",
        "class Turn:\n    async def run(self):\n        import recall.tools\n",
    ),
    "in a nested function": (
        "agents.services",
        "def f():\n    def g():\n        from agents.models import Message\n",
    ),
    "in scripted_llm": ("scripted_llm.server", "def main():\n    from condense import types\n"),
    "ready() outside apps.py": (
        "agents.services",
        "class Config:\n    def ready(self):\n        from agents import models\n",
    ),
    "another method of apps.py": (
        "agents.apps",
        "class AgentsConfig:\n    def setup(self):\n        from agents import services\n",
    ),
    "a function named ready in apps.py": (
        "agents.apps",
        "def ready():\n    from agents import services\n",
    ),
}


@pytest.mark.parametrize(("module", "source"), INSIDE_A_FUNCTION.values(), ids=INSIDE_A_FUNCTION)
def test_a_first_party_import_inside_a_function_is_refused(module: str, source: str) -> None:
    assert any("inside" in v for v in _check(module, source))


ALLOWED: dict[str, tuple[str, str] | tuple[str, str, bool]] = {
    "down the layers": ("chat.turn", "from compaction import service\nimport agents.models\n"),
    "llm → condense.types": ("llm.types", "from condense.types import Message, ToolCall\n"),
    "llm, relative, its own": ("llm.collect", "from .types import Completion\n"),
    "llm's __init__, relative": ("llm", "from .base import Provider\n", True),
    "condense, its own": ("condense.compressor", "from condense.types import Message\n"),
    "the socket → web": ("channels_app.html_encoder", "from web import presentation\n"),
    "scripted_llm → the product": ("scripted_llm.server", "from condense.types import ToolCall\n"),
    "bench → the product and scripted_llm, inside a function": (
        "bench.chat_turn",
        "import scripted_llm\ndef run():\n    from agents.models import ChatSession\n",
    ),
    "AppConfig.ready": (
        "agents.apps",
        "class AgentsConfig:\n    def ready(self):\n        from agents import services\n",
    ),
    "a standard-library import inside a function": ("llm.collect", "def f():\n    import json\n"),
}


@pytest.mark.parametrize(
    ("module", "source", "is_package"),
    _cases(ALLOWED),
    ids=ALLOWED.keys(),
)
def test_what_the_layers_allow_passes(module: str, source: str, is_package: bool) -> None:
    assert _check(module, source, is_package=is_package) == []


def test_relative_imports_resolve_against_their_module() -> None:
    assert graph.resolve("llm.collect", False, 1, "types") == "llm.types"
    assert graph.resolve("llm", True, 1, "types") == "llm.types"
    assert graph.resolve("bench.ws_load.cli", False, 2, "report") == "bench.report"
    assert graph.resolve("bench.ws_load", True, 2, None) == "bench"
    with pytest.raises(graph.RelativeImportError):
        graph.resolve("llm.collect", False, 2, "compaction")


def test_the_framework_free_packages_load_no_framework() -> None:
    assert _check("condense.tokens", "import django.conf\n") != []
    assert _check("llm.transport", "from channels.db import database_sync_to_async\n") != []
    assert _check("agents.services", "from django.db import transaction\n") == []


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """The scanned packages' Python files, copied: the checker scans it as it scans ours."""
    for package in graph.SCANNED:
        for path in (graph.ROOT / package).rglob("*.py"):
            target = tmp_path / path.relative_to(graph.ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    return tmp_path


def _plant(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.write_text(path.read_text() + text)


def test_a_copy_of_the_tree_scans_clean(tree_copy: Path) -> None:
    assert graph.scan(tree_copy) == {}
    assert graph.top_level_packages(tree_copy) == {*graph.SCANNED, "tests"}


PLANTS = {
    "llm → compaction.records": (
        "llm/collect.py",
        "\nfrom compaction.records import CompactionAudit\n",
        "llm.collect",
    ),
    "relative, inside a function": (
        "llm/factory.py",
        "\ndef _late():\n    from .types import ChannelConfig\n",
        "llm.factory",
    ),
    "compaction → the socket layer": (
        "compaction/trigger.py",
        "\nfrom channels_app import gateway\n",
        "compaction.trigger",
    ),
    "a migration → chat": (
        "agents/migrations/0001_initial.py",
        "\nfrom chat import turn\n",
        "agents.migrations.0001_initial",
    ),
    "the product → scripted_llm": (
        "chat/turn.py",
        "\nimport scripted_llm\n",
        "chat.turn",
    ),
    "bench, in a subpackage → the tests": (
        "bench/ws_load/client.py",
        "\nfrom tests import factories\n",
        "bench.ws_load.client",
    ),
}


@pytest.mark.parametrize(("relative", "text", "module"), PLANTS.values(), ids=PLANTS.keys())
def test_an_import_planted_in_a_copy_of_the_tree_fails_the_scan(
    tree_copy: Path, relative: str, text: str, module: str
) -> None:
    _plant(tree_copy, relative, text)
    assert list(graph.scan(tree_copy)) == [module]


def test_a_new_top_level_package_is_noticed(tree_copy: Path) -> None:
    (tree_copy / "newpkg").mkdir()
    (tree_copy / "newpkg" / "__init__.py").write_text("import chat.turn\n")
    assert graph.top_level_packages(tree_copy) != {*graph.SCANNED, "tests"}
