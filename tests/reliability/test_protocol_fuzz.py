"""Protocol fuzzing: whatever a client sends, it gets a clear error or refusal, never a crash.

Hypothesis generates WebSocket frames (garbage text, truncated and malformed JSON, JSON
of the wrong shape, wrong field types, unknown types, lone surrogates, other users'
session ids) and REST bodies. For every frame the socket must answer a probe
afterwards (it stayed open and its consumer is alive); every server frame must be
one JSON event of a known type that a real Daphne can send (UTF-8 encodable: a
lone surrogate in a frame makes Daphne close the socket with 1011); nothing of
another user's session and no API key may appear; and the server never answers
``internal_error`` (a crash handled too late). The REST endpoints must answer
every body with a 4xx JSON error or a success, never a 5xx.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agents.models import ChatSession
from agents.services import message_append
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.frames import server_frames_ok
from tests.support.sockets import connect

pytestmark = pytest.mark.django_db(transaction=True)

BOB_SECRET = "bob-private-diary-5d1c"
BOB_KEY = "sk-bob-channel-key-77aa90"
ALICE_KEY = "sk-alice-channel-key-1b2c3d"
SECRETS = (BOB_SECRET, BOB_KEY, ALICE_KEY)
OWN, FOREIGN = "@own", "@foreign"  # placeholders, replaced by real ids per run
HAS_SERVICE = importlib.util.find_spec("compaction.run") is not None

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# -- strategies ---------------------------------------------------------------------

surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)
texts = st.text(max_size=40) | surrogates | st.sampled_from(["", " ", "\x00", "😀", "你好"])
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
session_ids = (
    st.sampled_from([OWN, FOREIGN, OWN, FOREIGN])
    | st.uuids().map(str)
    | st.sampled_from([OWN.upper(), "00000000-0000-0000-0000-000000000000", "../../etc"])
    | json_values
)
frame_types = st.sampled_from(["chat", "compact", "chat", "compact"]) | texts | json_values
frame_objects = st.fixed_dictionaries(
    {},
    optional={
        "type": frame_types,
        "sessionId": session_ids,
        "content": texts | json_values,
        "instructions": texts | json_values,
        "HEADERS": json_values,
        "extra": json_values,
    },
)
frames = st.one_of(
    st.tuples(st.just("raw"), st.text(max_size=80)),
    st.tuples(st.just("json"), json_values),
    st.tuples(st.just("json"), frame_objects),
    st.tuples(st.just("truncated"), frame_objects),
)


def _materialize(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_materialize(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _materialize(v, ids) for k, v in value.items()}
    return value


def _frame_text(spec: tuple[str, Any], ids: dict[str, str]) -> str:
    kind, value = spec
    if kind == "raw":
        return value
    if (
        not HAS_SERVICE
        and isinstance(value, dict)
        and value.get("type") == "compact"
        and value.get("sessionId") == OWN
    ):
        value = {**value, "sessionId": FOREIGN}  # compacting needs compaction.run
    text = json.dumps(_materialize(value, ids))
    return text[: max(1, len(text) - 1)] if kind == "truncated" else text


# -- the world ---------------------------------------------------------------------


@pytest.fixture
def world(db) -> dict[str, str]:
    """Alice (fuzzing) has a session whose agent has no model (chat turns are refused
    quickly, so they finish); Bob's session holds a secret, his channel a key."""
    alice, bob = make_user(), make_user()
    alice_channel = make_channel(api_key=ALICE_KEY, enabled=False)
    own = make_session(owner=alice, agent=make_agent(owner=alice, model_channel=alice_channel))
    bob_channel = make_channel(api_key=BOB_KEY, is_auxiliary=True)
    foreign = make_session(owner=bob, agent=make_agent(owner=bob, model_channel=bob_channel))
    message_append(session=foreign, role="user", content=BOB_SECRET)
    return {
        "token": Token.objects.create(user=alice).key,
        OWN: str(own.pk),
        FOREIGN: str(foreign.pk),
        OWN.upper(): str(own.pk).upper(),
    }


async def _exchange(token: str, texts_to_send: list[str], own: str, path: str = "/ws/chat/"):
    """Send each frame, then a probe the socket must answer; end with a chat on the own
    session, which the socket refuses (its agent has no usable channel)."""
    communicator, connected = await connect(token=token, origin=None, path=path)
    assert connected
    received: list[str] = []

    async def until(predicate) -> None:
        async with asyncio.timeout(15):
            while True:
                raw = await communicator.receive_from(timeout=15)
                received.append(raw)
                if predicate(json.loads(raw)):
                    return

    try:
        for text in texts_to_send:
            # send_input: the communicator's send_to refuses an empty text frame; a client may not
            await communicator.send_input({"type": "websocket.receive", "text": text})
            probe = str(uuid.uuid4())
            await communicator.send_to(
                text_data=json.dumps({"type": "compact", "sessionId": probe})
            )
            await until(lambda e, p=probe: e.get("type") == "error" and e.get("sessionId") == p)
        final = f"final probe {uuid.uuid4()}"
        await communicator.send_to(
            text_data=json.dumps({"type": "chat", "sessionId": own, "content": final})
        )

        def final_done(event: dict[str, Any]) -> bool:
            # an agent without a usable channel: the chat is refused, nothing stored
            return event.get("type") == "error" and event.get("reason") == "no_model_channel"

        await until(final_done)
        assert await communicator.receive_nothing(timeout=0.05)
    finally:
        await communicator.disconnect()
    return received


def _check(received: list[str]) -> None:
    events = server_frames_ok(received, forbidden=SECRETS)
    reasons = {e.get("reason") for e in events if e["type"] in ("error", "compaction_failed")}
    assert "internal_error" not in reasons, [e for e in events if e.get("reason")][:5]


# -- WebSocket ---------------------------------------------------------------------


@FUZZ
@given(specs=st.lists(frames, min_size=1, max_size=4))
@example(specs=[("json", {"type": "chat", "sessionId": "\ud800", "content": "x"})])
@example(specs=[("json", {"type": "chat", "sessionId": OWN, "content": "a\udfffb"})])
@example(specs=[("json", {"type": "compact", "sessionId": OWN, "instructions": "\ud83d"})])
@example(specs=[("json", {"type": "\udc00", "sessionId": OWN})])
@example(specs=[("json", {"type": "chat", "sessionId": FOREIGN, "content": "read it"})])
def test_fuzzed_frames_get_clear_errors_and_the_socket_keeps_answering(world, specs) -> None:
    texts_to_send = [_frame_text(spec, world) for spec in specs]
    _check(asyncio.run(_exchange(world["token"], texts_to_send, world[OWN])))


@pytest.mark.parametrize(
    ("make_frame", "reason"),
    [
        (lambda own: "x" * 1_048_576, "frame_too_large"),
        (
            lambda own: json.dumps({"type": "chat", "sessionId": own, "content": "y" * 1_048_576}),
            "frame_too_large",
        ),
        (
            lambda own: json.dumps({"type": "chat", "sessionId": own, "content": "界" * 100_000}),
            "frame_too_large",  # 300 kB of UTF-8 in 100 k characters
        ),
        (
            lambda own: json.dumps({"type": "chat", "sessionId": own, "content": "z" * 200_001}),
            "message_too_long",
        ),
        (lambda own: "[" * 100_000 + "]" * 100_000, "bad_json"),
        (lambda own: '{"a":' * 40_000 + "1" + "}" * 40_000, "bad_json"),
        (
            lambda own: json.dumps([{"type": "chat", "sessionId": own, "content": "hi"}]),
            "bad_frame",
        ),
        (lambda own: '{"type": "chat", "type": "teleport", "sessionId": "x"}', "unknown_type"),
        (lambda own: "NaN", "bad_frame"),
    ],
    ids=[
        "1MB-garbage",
        "1MB-chat",
        "300kB-utf8",
        "content-too-long",
        "deep-list",
        "deep-object",
        "list",
        "duplicate-key",
        "nan",
    ],
)
def test_huge_and_pathological_frames_are_refused_with_a_reason(world, make_frame, reason) -> None:
    async def run() -> list[str]:
        communicator, _ = await connect(token=world["token"], origin=None)
        await communicator.send_to(text_data=make_frame(world[OWN]))
        first = await communicator.receive_from(timeout=10)
        await communicator.send_to(text_data=json.dumps({"type": "compact", "sessionId": "x"}))
        second = await communicator.receive_from(timeout=10)
        await communicator.disconnect()
        return [first, second]

    first, second = server_frames_ok(asyncio.run(run()), forbidden=SECRETS)
    assert first["type"] == "error" and first["reason"] == reason, first
    assert len(first["error"]) < 200, "the error names the problem; it does not echo the frame"
    assert second["reason"] == "unknown_session", "the socket still answers"
    assert ChatSession.objects.get(pk=world[OWN]).messages.count() == 0


def test_the_html_socket_survives_the_same_frames(world) -> None:
    """The chat page's socket: fragments must be sendable too, and it keeps answering."""
    hostile = [
        json.dumps({"type": "chat", "sessionId": "\ud800", "content": "x"}),
        json.dumps({"type": "chat", "sessionId": world[FOREIGN], "content": "x"}),
        json.dumps({"type": "chat", "sessionId": world[OWN], "content": "x\udc00"}),
        "x" * 1_048_576,
        "{",
    ]

    async def run() -> list[str]:
        path = f"/ws/chat/html/?session={world[OWN]}"
        communicator, connected = await connect(token=world["token"], origin=None, path=path)
        assert connected
        received = []
        for text in hostile:
            await communicator.send_to(text_data=text)
            # the probe: a chat on the own session, refused (its agent has no usable
            # channel) with a notice; the socket must still answer it
            probe = {"type": "chat", "sessionId": world[OWN], "content": "probe"}
            await communicator.send_to(text_data=json.dumps(probe))
            answered = False
            async with asyncio.timeout(15):
                while not (answered and await communicator.receive_nothing(timeout=0.3)):
                    raw = await communicator.receive_from(timeout=15)
                    received.append(raw)
                    answered = answered or "no_model_channel" in raw
        assert await communicator.receive_nothing(timeout=0.1)
        await communicator.disconnect()
        return received

    for raw in asyncio.run(run()):
        raw.encode("utf-8")
        for secret in SECRETS:
            assert secret not in raw


# -- REST --------------------------------------------------------------------------


def _api(token: str) -> APIClient:
    return APIClient(HTTP_AUTHORIZATION=f"Token {token}", HTTP_ACCEPT_LANGUAGE="en")


def _rest_targets(world: dict[str, str]) -> list[tuple[str, str]]:
    own = ChatSession.objects.get(pk=world[OWN])
    targets = [
        ("post", "/api/sessions/"),
        ("patch", f"/api/agents/{own.agent_id}/"),
        ("post", "/api/agents/"),
        ("post", "/api/auth/token/"),
        ("post", f"/api/sessions/{world[FOREIGN]}/compact/"),
        ("get", f"/api/sessions/{world[OWN]}/messages/"),
    ]
    if HAS_SERVICE:
        targets.append(("post", f"/api/sessions/{world[OWN]}/compact/"))
    return targets


def _check_response(response: Any, where: str) -> None:
    assert response.status_code < 500, (where, response.status_code, response.content[:300])
    text = response.content.decode("utf-8")
    for secret in SECRETS:
        assert secret not in text, where
    if response.content:
        json.loads(text)


@FUZZ
@given(body=json_values | frame_objects, target=st.integers(min_value=0, max_value=6))
@example(body={"agent": "\ud800"}, target=0)
@example(body={"instructions": "\udfff"}, target=6)
@example(body={"name": "\ud800", "compaction_threshold_percent": 10**30}, target=1)
@example(body={"username": ["x"], "password": {"a": 1}}, target=3)
@example(body={"name": "\ud800"}, target=1)
@example(body={"name": "a\udfff", "system_prompt": "\ud800"}, target=2)
@example(body={"username": "\ud800", "password": "\ud800"}, target=3)
def test_fuzzed_json_bodies_get_4xx_errors_not_crashes(world, body, target) -> None:
    targets = _rest_targets(world)
    method, url = targets[target % len(targets)]
    api = _api(world["token"])
    data = json.dumps(_materialize(body, world))
    if method == "get":
        response = api.get(url, {"view": data[:50]})
    else:
        response = getattr(api, method)(url, data, content_type="application/json")
    _check_response(response, f"{method} {url} {data[:80]}")


@FUZZ
@given(
    raw=st.binary(max_size=200),
    content_type=st.sampled_from(
        [
            "application/json",
            "text/plain",
            "multipart/form-data; boundary=x",
            "application/octet-stream",
            "application/x-www-form-urlencoded",
        ]
    ),
    target=st.integers(min_value=0, max_value=6),
)
@example(raw=b'{"agent": 1', content_type="application/json", target=0)
@example(raw=b"\xff\xfe\x00", content_type="application/json", target=6)
@example(raw=b'"\\ud800"', content_type="application/json", target=6)
def test_fuzzed_raw_bodies_get_4xx_errors_not_crashes(world, raw, content_type, target) -> None:
    targets = [t for t in _rest_targets(world) if t[0] != "get"]
    method, url = targets[target % len(targets)]
    response = _api(world["token"]).generic(method.upper(), url, raw, content_type)
    _check_response(response, f"{method} {url} {raw[:40]!r} {content_type}")
