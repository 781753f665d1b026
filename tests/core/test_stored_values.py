"""What the database holds becomes the core's values in one way: a role from the closed set,
tool calls with every field a string."""

from __future__ import annotations

import pytest

from condense import ToolCall, core_role, tool_calls_from_json, tool_calls_to_json
from condense.types import ROLES


@pytest.mark.parametrize("role", ROLES)
def test_every_role_the_core_knows_comes_through(role: str) -> None:
    assert core_role(role) == role


@pytest.mark.parametrize("role", ["", "developer", "User", "function"])
def test_a_role_the_core_does_not_know_is_refused(role: str) -> None:
    with pytest.raises(KeyError):
        core_role(role)


def test_stored_tool_calls_become_the_cores_with_missing_fields_empty() -> None:
    stored = [
        {"id": "call_1", "name": "read_file", "arguments": '{"path": "a.py"}'},
        {"id": 7, "name": "grep"},
        {},
    ]
    assert tool_calls_from_json(stored) == (
        ToolCall("call_1", "read_file", '{"path": "a.py"}'),
        ToolCall("7", "grep", ""),
        ToolCall("", "", ""),
    )


def test_the_cores_calls_come_back_from_what_a_row_stores() -> None:
    calls = (ToolCall("call_1", "read_file", '{"path": "a.py"}'), ToolCall("c2", "grep", ""))
    assert tool_calls_from_json(tool_calls_to_json(calls)) == calls
