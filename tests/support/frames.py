"""Checks of the frames a chat socket sends: what a real server could send, well-formed."""

from __future__ import annotations

import json

KNOWN_EVENT_TYPES = {
    "compaction_start",
    "compaction_done",
    "compaction_failed",
    "compaction_skipped",
    "token_update",
    "message",
    "delta",
    "turn_done",
    "error",
}


def server_frames_ok(frames: list[str], *, forbidden: tuple[str, ...] = ()) -> list[dict]:
    """Every server frame is sendable by a real server and well-formed; returns them parsed.

    A real Daphne encodes each text frame as UTF-8 (a lone surrogate kills the socket
    with 1011), so each must encode; each is one JSON object of a known type, and
    none contains any of ``forbidden`` (another user's content, API keys).
    """
    parsed = []
    for frame in frames:
        frame.encode("utf-8")  # raises UnicodeEncodeError for what Daphne cannot send
        data = json.loads(frame)
        assert isinstance(data, dict) and data.get("type") in KNOWN_EVENT_TYPES, frame[:300]
        for secret in forbidden:
            assert secret not in frame, f"{secret!r} leaked in {frame[:300]}"
        parsed.append(data)
    return parsed
