"""The bounds every tool call lives within: time, bytes, calls per step, workspace size.

Read from ``settings.NETACLAW`` (see the README's configuration table) each time a turn
builds its tools, so a changed setting applies to the next turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True, slots=True)
class ToolLimits:
    # Seconds one tool call may take; then it ends with a tool error.
    timeout_seconds: float = 30.0
    # Tool calls run per model step; the model's further calls get an error result.
    calls_per_step: int = 16
    # Bytes of JSON arguments one call may carry (they are stored and re-sent).
    argument_bytes: int = 1_500_000
    # Bytes of JSON arguments all the calls of one step may carry together.
    step_argument_bytes: int = 3_000_000
    # Bytes one write_file call may write.
    write_bytes: int = 1_000_000
    # Bytes all the files of one session's workspace may hold together; each folder counts
    # as its size on disk, at least a 4,096-byte block.
    workspace_quota_bytes: int = 20_000_000
    # Folders one session's workspace may hold, and how deep a file may lie below its root.
    workspace_folders: int = 1_000
    workspace_depth: int = 32

    @classmethod
    def from_settings(cls) -> ToolLimits:
        """The configured limits; the defaults above where a setting is missing."""
        try:
            conf: dict[str, Any] = getattr(settings, "NETACLAW", {})
        except ImproperlyConfigured:  # used without Django settings (a script, a bench)
            conf = {}
        base = DEFAULT_LIMITS
        return cls(
            timeout_seconds=float(conf.get("TOOL_TIMEOUT_SECONDS", base.timeout_seconds)),
            calls_per_step=int(conf.get("TOOL_CALLS_PER_STEP", base.calls_per_step)),
            argument_bytes=int(conf.get("TOOL_ARGUMENT_BYTES", base.argument_bytes)),
            step_argument_bytes=int(conf.get("TOOL_STEP_ARGUMENT_BYTES", base.step_argument_bytes)),
            write_bytes=int(conf.get("TOOL_WRITE_BYTES", base.write_bytes)),
            workspace_quota_bytes=int(
                conf.get("WORKSPACE_QUOTA_BYTES", base.workspace_quota_bytes)
            ),
            workspace_folders=int(conf.get("WORKSPACE_MAX_FOLDERS", base.workspace_folders)),
            workspace_depth=int(conf.get("WORKSPACE_MAX_DEPTH", base.workspace_depth)),
        )


DEFAULT_LIMITS = ToolLimits()
