from __future__ import annotations

import json
import os

import pytest

from agents.tools import TodoStore, Workspace, default_registry
from agents.tools.workspace import MAX_READ_BYTES
from condense import ToolCall


@pytest.fixture
def setup(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    ws = Workspace(tmp_path / "ws")
    todos = TodoStore()
    return default_registry(ws, todos), ws, todos, outside


async def call(registry, name: str, **args):
    return await registry.execute(ToolCall("c1", name, json.dumps(args)))


async def test_write_read_list_search(setup) -> None:
    registry, ws, _, _ = setup
    result = await call(registry, "write_file", path="src/app.py", content="x = 1\nprint('hi')\n")
    assert (result.is_error, result.content) == (False, "wrote 18 bytes to src/app.py")
    assert (await call(registry, "read_file", path="src/app.py")).content == "x = 1\nprint('hi')\n"
    listing = (await call(registry, "list_files")).content
    assert "src/" in listing and "src/app.py (18 bytes)" in listing
    assert (
        await call(registry, "search_files", pattern="print")
    ).content == "src/app.py:2: print('hi')"
    assert (await call(registry, "search_files", pattern="(unclosed")).content == "no matches"


async def test_large_files_are_truncated_with_a_note(setup) -> None:
    registry, ws, _, _ = setup
    (ws.root).mkdir(parents=True, exist_ok=True)
    (ws.root / "big.txt").write_text("a" * (MAX_READ_BYTES + 10))
    content = (await call(registry, "read_file", path="big.txt")).content
    assert content.startswith("a" * 100) and "[truncated: file is 200010 bytes" in content


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "a/../../outside.txt", "x\x00y"])
async def test_paths_that_escape_the_workspace_are_tool_errors(setup, path) -> None:
    registry, _, _, outside = setup
    for name, args in (
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
    ):
        result = await call(registry, name, **args)
        assert result.is_error and result.content == "path escapes the workspace"
    assert outside.read_text() == "secret"


async def test_a_symlink_pointing_outside_is_refused(setup) -> None:
    registry, ws, _, outside = setup
    ws.root.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, ws.root / "link.txt")
    result = await call(registry, "read_file", path="link.txt")
    assert result.is_error and result.content == "path escapes the workspace"
    result = await call(registry, "write_file", path="link.txt", content="pwned")
    assert result.is_error and outside.read_text() == "secret"
    assert "secret" not in (await call(registry, "search_files", pattern="secret")).content


async def test_bad_calls_become_error_results(setup) -> None:
    registry, _, _, _ = setup
    assert (await registry.execute(ToolCall("c", "rm_rf", "{}"))).content == "unknown tool 'rm_rf'"
    bad_json = await registry.execute(ToolCall("c", "read_file", "{nope"))
    assert bad_json.is_error and bad_json.content.startswith("arguments are not valid JSON")
    missing = await call(registry, "read_file")
    assert missing.content == "missing required argument 'path'"
    wrong = await call(registry, "read_file", path=3)
    assert wrong.content == "argument 'path' must be of type string"
    assert (await call(registry, "read_file", path="nope.txt")).content == "no such file: nope.txt"


async def test_todo_write_replaces_the_list_and_validates(setup) -> None:
    registry, _, todos, _ = setup
    ok = await call(
        registry, "todo_write", todos=[{"content": "fix parser", "status": "in_progress"}]
    )
    assert not ok.is_error and todos.items == [{"content": "fix parser", "status": "in_progress"}]
    bad = await call(registry, "todo_write", todos=[{"content": "x", "status": "done-ish"}])
    assert bad.is_error and "status must be one of" in bad.content
    assert todos.items == [{"content": "fix parser", "status": "in_progress"}]


def test_every_tool_has_an_object_schema(setup) -> None:
    registry, _, _, _ = setup
    names = {s.name for s in registry.specs}
    assert names == {"list_files", "read_file", "write_file", "search_files", "todo_write"}
    assert all(s.parameters["type"] == "object" for s in registry.specs)
