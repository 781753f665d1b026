"""The consumer hands each client frame to its ``on_<type>`` handler (issue 23), as Channels
hands ``websocket.receive`` to ``websocket_receive``: one handler per frame type, none for
a type the protocol does not parse, no frame left to fall through to a default branch.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, get_args

import pytest

from channels_app.consumers import ChatConsumer, ChatHtmlConsumer
from channels_app.protocol import ClientFrame, parse_client_frame

SID = "7d1c1c9e-8e0e-4f57-9a55-1f3f9f2b3c4d"
FRAME_CLASSES = get_args(ClientFrame)

# one wire frame of each type the protocol parses
WIRE = [
    {"type": "chat", "sessionId": SID, "content": "hi"},
    {"type": "chat", "agent": 3, "content": "a new chat"},
    {"type": "compact", "sessionId": SID, "instructions": "keep paths", "upTo": 9},
    {"type": "stop", "sessionId": SID},
    {"type": "resume", "sessionId": SID, "afterSeq": 3},
    {"type": "retry", "sessionId": SID},
    {"type": "undo", "sessionId": SID, "compactionId": 4},
    {"type": "preview_accept", "sessionId": SID, "previewId": 5, "summary": "edited"},
    {"type": "preview_discard", "sessionId": SID, "previewId": 5},
    {"type": "regenerate", "sessionId": SID, "messageId": 6},
    {"type": "edit", "sessionId": SID, "messageId": 6, "content": "again"},
    {"type": "branch", "sessionId": SID, "forkId": 2, "version": 1},
]


def test_every_frame_type_has_its_own_handler() -> None:
    types = [frame.type for frame in FRAME_CLASSES]
    assert len(set(types)) == len(FRAME_CLASSES) == 12
    for consumer in (ChatConsumer, ChatHtmlConsumer):
        handlers = {name for name, _ in inspect.getmembers(consumer) if name.startswith("on_")}
        assert handlers == {f"on_{t}" for t in types}
        assert all(inspect.iscoroutinefunction(getattr(consumer, h)) for h in handlers)


def test_the_wire_frames_cover_every_frame_class() -> None:
    parsed = {type(parse_client_frame(json.dumps(w), max_bytes=10_000)) for w in WIRE}
    assert parsed == set(FRAME_CLASSES)


@pytest.mark.parametrize("wire", WIRE, ids=[f"{w['type']}-{i}" for i, w in enumerate(WIRE)])
async def test_receive_hands_the_parsed_frame_to_its_handler_only(wire: dict[str, Any]) -> None:
    consumer = ChatConsumer()
    seen: list[tuple[str, object]] = []
    for frame_class in FRAME_CLASSES:
        name = f"on_{frame_class.type}"

        async def record(frame: object, name: str = name) -> None:
            seen.append((name, frame))

        setattr(consumer, name, record)
    text = json.dumps(wire)
    await consumer.receive(text_data=text)
    frame = parse_client_frame(text, max_bytes=10_000)
    assert seen == [(f"on_{frame.type}", frame)]
