"""Folders cannot brick a chat or escape its quota (issue 27 items 3 and 4).

Two ``write_file`` calls built a tree 1,400 folders deep: every later write, list and search
failed (RecursionError), and deleting the chat answered an HTML 500 and left the folder. One
model step made 11,201 empty folders (45 MB on disk) that the quota counted as 0 bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents.tools import TodoStore, ToolLimits, Workspace, default_registry, remove_tree
from agents.tools.workspace import FOLDER_BYTES
from condense import ToolCall

DEEP = 1_400


@pytest.fixture
def ws(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    workspace.root.mkdir(parents=True)
    yield workspace
    remove_tree(workspace.root)  # whatever a failing test left, at any depth


async def call(registry, name: str, **args):
    return await registry.execute(ToolCall("c1", name, json.dumps(args)))


def _registry(ws, **limits):
    """The tools over ``ws``'s folder, with these limits (the defaults otherwise)."""
    return default_registry(Workspace(ws.root, ToolLimits(**limits)), TodoStore())


@pytest.fixture
def deep_tree(request):
    """Makes a chain of ``depth`` folders below a root (as the tools once made), a file at
    its bottom; whatever is left of it goes after the test (pytest's own clean-up of its
    temporary folders recurses, and would fail on it for every later session)."""
    made: list[Path] = []

    def make(root: Path, depth: int = DEEP) -> Path:
        made.append(root / "d")
        return _chain(root, depth)

    yield make
    for chain in made:
        remove_tree(chain)


def _chain(root: Path, depth: int) -> Path:
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    fd = top
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        if fd != top:
            os.close(fd)
        fd = child
    with open(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w") as fh:
        fh.write("needle at the bottom\n")
    os.close(top)
    return root / "d"


# --- item 3: depth ----------------------------------------------------------------------


async def test_write_file_refuses_a_path_deeper_than_the_limit(ws) -> None:
    registry = _registry(ws)
    half = "/".join(["d"] * (DEEP // 2)) + "/x.txt"
    refused = await call(registry, "write_file", path=half, content="x")
    assert (refused.is_error, refused.content) == (
        True,
        "path is 1405 characters; the limit is 1024",
    )
    deep = "/".join(["d"] * 500) + "/x.txt"
    refused = await call(registry, "write_file", path=deep, content="x")
    assert refused.is_error
    assert refused.content == (
        "path is 500 folders deep; the limit is 32 folders below the workspace root "
        "(write it higher up)"
    )
    assert not (ws.root / "d").exists()
    at_limit = "/".join(["e"] * 32) + "/x.txt"
    assert not (await call(registry, "write_file", path=at_limit, content="x")).is_error
    too_deep = "/".join(["e"] * 33) + "/x.txt"
    assert (await call(registry, "write_file", path=too_deep, content="x")).is_error
    long_path = "a" * 1025
    assert (await call(registry, "read_file", path=long_path)).content == (
        "path is 1025 characters; the limit is 1024"
    )


async def test_a_tree_deeper_than_the_recursion_limit_breaks_no_tool(ws, deep_tree) -> None:
    deep_tree(ws.root)
    registry = _registry(ws)
    written = await call(registry, "write_file", path="notes.txt", content="still here")
    assert not written.is_error, written.content
    listed = await call(registry, "list_files")
    assert not listed.is_error, listed.content
    assert listed.content.splitlines()[:2] == ["d/", "d/d/"]
    found = await call(registry, "search_files", pattern="still")
    assert (found.is_error, found.content) == (False, "notes.txt:1: still here")
    assert not (await call(registry, "read_file", path="notes.txt")).is_error


def test_remove_tree_deletes_a_tree_of_any_depth(tmp_path, deep_tree) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    deep_tree(root)
    (root / "side").mkdir()
    (root / "side" / "f.txt").write_text("x")
    os.symlink(tmp_path, root / "link")  # a link is removed, never followed
    (tmp_path / "outside.txt").write_text("kept")
    remove_tree(root)
    assert not root.exists() and (tmp_path / "outside.txt").read_text() == "kept"
    remove_tree(root)  # already gone: nothing to do


@pytest.mark.django_db
def test_deleting_a_chat_with_a_deep_workspace_removes_it(
    django_capture_on_commit_callbacks, deep_tree
) -> None:
    from agents.models import ChatSession
    from agents.tools import session_workspace_root
    from tests.factories import make_session
    from tests.support.api_clients import token_client

    session = make_session()
    root = session_workspace_root(session.pk)
    root.mkdir(parents=True)
    deep_tree(root)
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(session.owner).delete(f"/api/sessions/{session.pk}/")
    assert response.status_code == 204
    assert not ChatSession.objects.filter(pk=session.pk).exists()
    assert not root.exists()


# --- item 4: how many folders, and what they cost ------------------------------------------


async def test_folders_count_against_the_quota(ws) -> None:
    registry = _registry(ws, workspace_quota_bytes=3 * FOLDER_BYTES)
    assert not (await call(registry, "write_file", path="a/b/x.txt", content="x")).is_error
    assert ws.measure().folders == 2 and ws.usage() == 2 * FOLDER_BYTES + 1
    refused = await call(registry, "write_file", path="c/d/y.txt", content="y")
    assert refused.is_error and refused.content.startswith("workspace quota exceeded")
    assert f"would bring the workspace to {4 * FOLDER_BYTES + 2} bytes" in refused.content
    assert not (ws.root / "c").exists()
    assert not (await call(registry, "write_file", path="a/y.txt", content="y")).is_error


async def test_a_step_cannot_make_more_folders_than_the_limit(ws) -> None:
    registry = _registry(ws, workspace_folders=40)
    calls = [
        ToolCall(f"c{i}", "write_file", json.dumps({"path": f"t{i}/" * 30 + "x", "content": ""}))
        for i in range(16)
    ]
    results = [await registry.execute(c) for c, _ in registry.plan_step(calls)]
    assert [r.is_error for r in results] == [False] + [True] * 15
    assert results[1].content == (
        "workspace folder limit: writing t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/"
        "t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/t1/x would make 30 folders, bringing the "
        "workspace to 60 folders, over its limit of 40; nothing was written (write into "
        "existing folders)"
    )
    assert ws.measure().folders == 30


def test_the_folder_limits_come_from_the_settings(settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "WORKSPACE_MAX_FOLDERS": 7, "WORKSPACE_MAX_DEPTH": 3}
    limits = ToolLimits.from_settings()
    assert (limits.workspace_folders, limits.workspace_depth) == (7, 3)
    assert (ToolLimits().workspace_folders, ToolLimits().workspace_depth) == (1_000, 32)


@pytest.mark.django_db
def test_the_admin_deletes_a_user_with_a_deep_workspace(
    client, django_capture_on_commit_callbacks, deep_tree
) -> None:
    from django.urls import reverse

    from agents.models import ChatSession
    from agents.tools import session_workspace_root
    from tests.factories import make_session, make_user

    session = make_session()
    root = session_workspace_root(session.pk)
    root.mkdir(parents=True)
    deep_tree(root)
    client.force_login(make_user("root-admin", is_staff=True, is_superuser=True))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("admin:auth_user_delete", args=[session.owner.pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    assert not ChatSession.objects.filter(pk=session.pk).exists() and not root.exists()
