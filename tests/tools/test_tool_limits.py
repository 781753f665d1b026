"""No tool stalls the server, fills the disk or shows a server path (issue 15, items 1, 5, 6)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from agents.tools import TodoStore, ToolLimits, Workspace, default_registry
from agents.tools import workspace as workspace_module
from agents.tools.registry import Tool, ToolRegistry, check_deadline
from condense import ToolCall
from llm import ToolSpec

CATASTROPHIC = "(a+)+$"  # exponential for a backtracking engine on "aaa…a!"


@pytest.fixture
def ws(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    workspace.root.mkdir(parents=True)
    return workspace


async def call(registry, name: str, **args):
    return await registry.execute(ToolCall("c1", name, json.dumps(args)))


def _registry(ws, **limits):
    return default_registry(ws, TodoStore(), ToolLimits(**limits) if limits else None)


# --- item 1: regular expressions, caps and time limits -------------------------------------


async def test_a_catastrophic_pattern_over_a_file_returns_quickly(ws) -> None:
    # a backtracking engine needs seconds per short line (2x per extra "a"); RE2 microseconds
    lines = ["a" * 26 + "!", "a" * 26 + "!", *("b" * 5000 for _ in range(200)), "aaaa"]
    (ws.root / "evil.txt").write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    result = await call(_registry(ws), "search_files", pattern=CATASTROPHIC)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"search took {elapsed:.2f} s"
    assert not result.is_error and result.content == "evil.txt:203: aaaa"


async def test_the_event_loop_keeps_running_while_a_catastrophic_pattern_is_searched(ws) -> None:
    """Issue 15's "done when": another request on the same event loop still answers."""
    (ws.root / "evil.txt").write_text("a" * 26 + "!\n")
    registry = _registry(ws)
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    result = await call(registry, "search_files", pattern=CATASTROPHIC)
    await asyncio.sleep(0.05)
    stop.set()
    await ticking
    assert result.content == "no matches"
    assert max(gaps) < 1.0, f"the event loop stalled for {max(gaps):.2f} s"


@pytest.mark.parametrize("pattern", [r"(a)\1", r"foo(?=bar)", r"(?<!x)y", r"(?!a)b"])
async def test_patterns_re2_does_not_support_are_a_clear_error(ws, pattern) -> None:
    (ws.root / "f.txt").write_text("aa foobar y b\n")
    result = await call(_registry(ws), "search_files", pattern=pattern)
    assert result.is_error
    assert "pattern not supported" in result.content and "RE2" in result.content
    assert "backreferences" in result.content and "lookaround" in result.content


async def test_regular_expressions_and_plain_text_still_work(ws) -> None:
    (ws.root / "f.txt").write_text("def main():\n    call(x)\n")
    registry = _registry(ws)
    assert (await call(registry, "search_files", pattern=r"^def \w+\(")).content == (
        "f.txt:1: def main():"
    )
    assert (
        await call(registry, "search_files", pattern="call(x")
    ).content == "f.txt:2:     call(x)"


async def test_a_pattern_over_the_length_cap_is_refused(ws) -> None:
    limit = workspace_module.MAX_PATTERN_CHARS
    result = await call(_registry(ws), "search_files", pattern="a" * (limit + 1))
    assert result.is_error
    assert result.content == f"pattern is {limit + 1} characters; the limit is {limit}"
    assert not (await call(_registry(ws), "search_files", pattern="a" * limit)).is_error


async def test_search_caps_line_length_file_size_and_file_count(ws, monkeypatch) -> None:
    monkeypatch.setattr(workspace_module, "MAX_SEARCH_LINE_CHARS", 20)
    monkeypatch.setattr(workspace_module, "MAX_SEARCH_FILE_BYTES", 100)
    monkeypatch.setattr(workspace_module, "MAX_SEARCH_FILES", 3)
    (ws.root / "a_long.txt").write_text("x" * 30 + "needle\nneedle\n")
    (ws.root / "b_big.txt").write_text("needle\n" * 20)  # 140 bytes
    for name in ("c.txt", "d.txt", "e.txt"):
        (ws.root / name).write_text("needle\n")
    content = (await call(_registry(ws), "search_files", pattern="needle")).content
    assert content.splitlines() == [
        "a_long.txt:2: needle",  # the match past the 20th character of line 1 is not seen
        "c.txt:1: needle",
        "[stopped after 3 files; search a narrower path]",
        "[skipped 1 files larger than 100 bytes]",
        "[searched only the first 20 characters of 1 longer lines]",
    ]


def _one_tool_registry(handler, timeout: float) -> ToolRegistry:
    spec = ToolSpec("slow", "A slow tool.", {"type": "object", "properties": {}})
    return ToolRegistry([Tool(spec, handler)], limits=ToolLimits(timeout_seconds=timeout))


async def test_a_slow_async_tool_ends_with_a_tool_error() -> None:
    async def forever() -> str:
        await asyncio.sleep(30)
        return "never"

    started = time.monotonic()
    result = await _one_tool_registry(forever, 0.2).execute(ToolCall("c1", "slow", "{}"))
    assert time.monotonic() - started < 1.0
    assert result.is_error and result.content.startswith("slow took longer than 0.2 s")


async def test_a_blocking_tool_runs_in_a_thread_and_stops_at_its_deadline() -> None:
    on_loop = threading.get_ident()
    seen: dict[str, object] = {}
    finished = threading.Event()

    def busy() -> str:  # blocking, cooperative: checks its deadline as it goes
        seen["thread"] = threading.get_ident()
        try:
            while True:
                time.sleep(0.01)
                check_deadline()
        finally:
            finished.set()

    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        for _ in range(30):
            await asyncio.sleep(0.01)
            gaps.append(time.monotonic() - last)
            last = time.monotonic()

    ticking = asyncio.create_task(ticker())
    started = time.monotonic()
    result = await _one_tool_registry(busy, 0.2).execute(ToolCall("c1", "slow", "{}"))
    assert time.monotonic() - started < 1.0
    await ticking
    assert result.is_error and result.content.startswith("slow took longer than 0.2 s")
    assert seen["thread"] != on_loop and max(gaps) < 0.5
    assert finished.wait(1.0), "the worker thread kept running after its deadline"


async def test_the_configured_time_limit_applies_to_the_workspace_tools(ws, settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "TOOL_TIMEOUT_SECONDS": 1e-9}
    registry = default_registry(Workspace(ws.root), TodoStore())
    result = await call(registry, "list_files")
    assert result.is_error and "took longer than" in result.content


# --- item 5: disk limits ---------------------------------------------------------------------


def _disk_usage(root) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


async def test_the_workspace_quota_refuses_a_write_and_writes_nothing(ws, settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "WORKSPACE_QUOTA_BYTES": 100}
    registry = default_registry(Workspace(ws.root), TodoStore())
    assert not (await call(registry, "write_file", path="a.txt", content="a" * 60)).is_error
    refused = await call(registry, "write_file", path="sub/b.txt", content="b" * 50)
    assert refused.is_error and refused.content.startswith("workspace quota exceeded")
    # 60 + 50 bytes of files and the new folder "sub" at 4,096 (issue 27 item 4)
    assert "4206 bytes, over its 100-byte limit; nothing was written" in refused.content
    assert not (ws.root / "sub").exists() and _disk_usage(ws.root) == 60
    # overwriting counts the new size, not both
    assert not (await call(registry, "write_file", path="a.txt", content="a" * 100)).is_error
    assert (await call(registry, "write_file", path="a.txt", content="a" * 101)).is_error
    assert _disk_usage(ws.root) == 100


async def test_per_call_caps_on_bytes_written_and_argument_size(ws, settings) -> None:
    settings.NETACLAW = {
        **settings.NETACLAW,
        "TOOL_WRITE_BYTES": 10,
        "TOOL_ARGUMENT_BYTES": 200,
    }
    registry = default_registry(Workspace(ws.root), TodoStore())
    too_much = await call(registry, "write_file", path="a.txt", content="x" * 11)
    assert too_much.is_error
    assert too_much.content == "content is 11 bytes; the limit is 10 bytes per write_file call"
    big_args = await call(registry, "search_files", pattern="y" * 300)
    assert big_args.is_error and big_args.content.startswith("not run: its arguments are 3")
    assert "the limit is 200 bytes per tool call" in big_args.content
    assert not (ws.root / "a.txt").exists()


def test_limits_come_from_the_settings(settings) -> None:
    settings.NETACLAW = {
        **settings.NETACLAW,
        "WORKSPACE_QUOTA_BYTES": 1,
        "TOOL_TIMEOUT_SECONDS": 2.5,
        "TOOL_WRITE_BYTES": 3,
        "TOOL_ARGUMENT_BYTES": 4,
        "TOOL_STEP_ARGUMENT_BYTES": 5,
        "TOOL_CALLS_PER_STEP": 6,
    }
    assert ToolLimits.from_settings() == ToolLimits(
        timeout_seconds=2.5,
        calls_per_step=6,
        argument_bytes=4,
        step_argument_bytes=5,
        write_bytes=3,
        workspace_quota_bytes=1,
    )


def test_a_step_over_its_caps_refuses_the_excess_calls_in_place(ws) -> None:
    registry = _registry(ws, calls_per_step=2, argument_bytes=100, step_argument_bytes=150)
    calls = [
        ToolCall("t1", "list_files", "{}"),
        ToolCall("t2", "write_file", json.dumps({"path": "a", "content": "x" * 200})),
        ToolCall("t3", "read_file", json.dumps({"path": "a", "limit": 1})),
        ToolCall("t4", "list_files", "{}"),
    ]
    planned = registry.plan_step(calls)
    assert [c.id for c, _ in planned] == ["t1", "t2", "t3", "t4"]
    assert [r is None for _, r in planned] == [True, False, True, False]
    assert planned[1][0].arguments == "{}"  # too large: neither stored nor re-sent
    assert "its arguments are" in planned[1][1].content
    assert "at most 2 tool calls are run per step (this was call 4 of 4)" in planned[3][1].content


# --- deleting a session removes its workspace ------------------------------------------------


@pytest.mark.django_db
def test_deleting_a_session_removes_its_workspace(django_capture_on_commit_callbacks) -> None:
    from agents import services
    from agents.models import ChatSession
    from agents.tools import session_workspace_root
    from tests.factories import make_session

    session, other = make_session(), make_session()
    for s in (session, other):
        root = session_workspace_root(s.pk)
        (root / "src").mkdir(parents=True)
        (root / "src" / "big.txt").write_text("x" * 1000)
    with django_capture_on_commit_callbacks(execute=True):
        services.session_delete(session=session)
    assert not ChatSession.objects.filter(pk=session.pk).exists()
    assert not session_workspace_root(session.pk).exists()
    assert (session_workspace_root(other.pk) / "src" / "big.txt").exists()


@pytest.mark.django_db
def test_the_admin_deletes_workspaces_one_by_one_and_in_bulk(
    client, django_capture_on_commit_callbacks
) -> None:
    from django.urls import reverse

    from agents.models import ChatSession
    from agents.tools import session_workspace_root
    from tests.factories import make_session, make_user

    client.force_login(make_user(is_staff=True, is_superuser=True))
    sessions = [make_session() for _ in range(3)]
    for s in sessions:
        session_workspace_root(s.pk).mkdir(parents=True)
        (session_workspace_root(s.pk) / "f.txt").write_text("hi")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("admin:agents_chatsession_delete", args=[sessions[0].pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("admin:agents_chatsession_changelist"),
            {
                "action": "delete_selected",
                "_selected_action": [str(s.pk) for s in sessions[1:]],
                "post": "yes",
            },
        )
    assert response.status_code == 302
    assert not ChatSession.objects.exists()
    assert [session_workspace_root(s.pk).exists() for s in sessions] == [False, False, False]


@pytest.mark.django_db
def test_deleting_a_user_removes_the_workspaces_of_their_chats(
    django_capture_on_commit_callbacks,
) -> None:
    """The cascade from the user to their chats bypasses ``session_delete``: the workspace
    goes with the row whatever deleted it."""
    from agents.tools import session_workspace_root
    from tests.factories import make_session, make_user

    owner, other = make_user(), make_user()
    theirs = [make_session(owner=owner) for _ in range(2)]
    kept = make_session(owner=other)
    for s in (*theirs, kept):
        session_workspace_root(s.pk).mkdir(parents=True)
        (session_workspace_root(s.pk) / "f.txt").write_text("hi")
    with django_capture_on_commit_callbacks(execute=True):
        owner.delete()
    assert [session_workspace_root(s.pk).exists() for s in theirs] == [False, False]
    assert (session_workspace_root(kept.pk) / "f.txt").exists()


# --- item 6: no server path in tool errors ---------------------------------------------------


async def test_tool_errors_show_workspace_relative_paths_only(ws, tmp_path) -> None:
    registry = _registry(ws)
    (ws.root / "src").mkdir()
    assert not (await call(registry, "write_file", path="a.txt", content="x")).is_error
    errors = [
        await call(registry, "write_file", path="a.txt/b.txt", content="x"),  # under a file
        await call(registry, "write_file", path="src", content="x"),  # a folder
        await call(registry, "write_file", path="n" * 300, content="x"),  # name too long
        await call(registry, "read_file", path="src/" + "n" * 300),
        await call(registry, "list_files", path="a.txt"),
    ]
    for result in errors:
        assert result.is_error, result
        assert str(tmp_path) not in result.content and "/tmp" not in result.content, result
    assert errors[0].content in ("File exists: a.txt", "Not a directory: a.txt/b.txt")
    assert errors[1].content == "not a file: src"


async def test_a_tool_bug_never_shows_the_workspace_root(ws) -> None:
    def broken() -> str:
        raise ValueError(f"cannot parse {ws.root.resolve()}/notes/x.md")

    def broken_os() -> str:
        raise PermissionError(13, "Permission denied", str(ws.root.resolve() / "x"))

    spec = ToolSpec("broken", "", {"type": "object", "properties": {}})
    for handler in (broken, broken_os):
        registry = ToolRegistry([Tool(spec, handler)], hidden_paths=[ws.root])
        result = await registry.execute(ToolCall("c1", "broken", "{}"))
        assert result.is_error and str(ws.root) not in result.content
    assert result.content == "broken failed: Permission denied"  # no exception's name
