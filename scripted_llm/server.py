"""A scripted LLM server that speaks the real OpenAI and Anthropic wires.

Why a real HTTP server and not a mocked SDK: the adapters' hardest bugs live where
the SDKs meet the wire (path composition, SSE framing, tool-call fragments, usage
chunks, status-code mapping, dropped connections). Driving the installed SDKs
against real sockets catches those; patching ``client.messages.create`` does not.

Usage::

    with ScriptedLLMServer() as server:
        server.enqueue(Reply(text="hello", tool_calls=[ToolCall("c1", "read", '{"p": 1}')]))
        server.enqueue(Fail(status=429))
        ...  # point an SDK at server.openai_base_url / server.anthropic_base_url
        assert server.requests[0].body["model"] == "m"

Each request takes the next scripted item (FIFO, shared by both wires); when the
queue is empty, ``server.responder(body, wire)`` decides (default: ``Reply("ok")``).
Items: ``Reply`` (text, tool calls, usage, chunking, pacing), ``Empty``, ``Fail``
(HTTP status), ``Hang`` (client timeouts), ``NonJSON``, ``Disconnect`` (dropped
mid-answer), ``StreamError`` (an error event inside a 200 stream).

``GET /v1/models`` (both wires) lists ``server.models``; it takes a script item too, so a
``Fail`` or ``Hang`` makes a channel's connection test fail.

Like the real API under ``anthropic-version: 2026-10-21``, the Anthropic endpoint
answers 400 to ``temperature`` / ``top_p`` / ``top_k`` (the script is not consumed).

Streaming responses use chunked transfer encoding, one HTTP chunk per SSE event, so a
``Disconnect`` is seen by the client as an incomplete body (a transport error), never as
a clean end of stream. A complete answer keeps the connection open for the next request,
as the providers' APIs do; every scripted failure closes it.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from condense.types import ToolCall

Wire = Literal["openai", "anthropic"]

# ---------------------------------------------------------------------------
# Script items


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful answer.

    ``input_tokens=None`` reports :func:`default_input_tokens` of the request, so
    usage-based meters see a deterministic figure that grows with the context.
    ``output_tokens=None`` reports ``len(text + arguments) // 4 + 1``.
    ``stop`` overrides the finish reason, in OpenAI words (``"stop"``,
    ``"tool_calls"``, ``"length"``); it is translated for the Anthropic wire.
    ``send_usage=False`` omits usage from the stream (servers that never send it).
    ``delay``: seconds before the answer starts, streamed or not (a slow model).
    """

    text: str = ""
    tool_calls: Iterable[ToolCall] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    chunk_size: int = 16
    delay_per_chunk: float = 0.0
    stop: str | None = None
    send_usage: bool = True
    delay: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")


@dataclass(frozen=True, slots=True)
class Fail:
    """An HTTP error status with a provider-shaped JSON error body (or ``body`` verbatim).

    ``should_retry`` sets the ``x-should-retry`` header both SDKs honour
    (``False`` stops an SDK from retrying a 429/500 even with retries enabled).
    """

    status: int = 500
    body: str | dict[str, Any] | None = None
    should_retry: bool | None = None


@dataclass(frozen=True, slots=True)
class Hang:
    """Send nothing for ``seconds`` (client timeouts), then close the connection."""

    seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class NonJSON:
    """Status 200 with a body that is not JSON (inside ``data:`` lines when streaming)."""

    body: str = "<html><body>502 Bad Gateway (but 200)</body></html>"


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Start answering, then drop the connection after ``after_events`` SSE events.

    Non-streamed requests get headers announcing a longer body than is sent.
    """

    after_events: int = 2
    text: str = "this answer is cut short by a dropped connection"


@dataclass(frozen=True, slots=True)
class StreamError:
    """A 200 stream that reports an error after ``after_events`` events.

    Anthropic sends ``event: error`` (e.g. ``overloaded_error``); OpenAI-style servers a
    ``data: {"error": …}`` chunk. A non-streamed request gets the matching HTTP error.
    """

    kind: str = "overloaded_error"
    message: str = "Overloaded"
    after_events: int = 2


@dataclass(frozen=True, slots=True)
class Empty:
    """A successful answer with no text and no tool calls."""

    input_tokens: int | None = None


Action = Reply | Fail | Hang | NonJSON | Disconnect | StreamError | Empty
Responder = Callable[[dict[str, Any], str], Action]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server saw it (header names lower-cased)."""

    wire: Wire
    path: str
    headers: dict[str, str]
    body: dict[str, Any] = field(hash=False)
    client_port: int = 0  # the client's end of the TCP connection: one per connection

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed answer."""
        return bool(self.body.get("stream"))

    @property
    def model(self) -> str | None:
        return self.body.get("model")


# ---------------------------------------------------------------------------
# Responders and token figures


def echo_responder(body: dict[str, Any], wire: str) -> Action:
    """The default: a short, fixed answer."""
    return Reply(text="ok")


LONG_TEXT = " ".join(f"Sentence {i} of a long streamed answer for benchmarks." for i in range(80))


def long_responder(body: dict[str, Any], wire: str) -> Action:
    """A long answer streamed in small chunks (for throughput benchmarks)."""
    return Reply(text=LONG_TEXT, chunk_size=16)


def slow_responder(body: dict[str, Any], wire: str) -> Action:
    """After 2 s, an answer naming the question it answers (failover benchmarks: which
    question got which answer, with time for a process to die mid-turn)."""
    question = _last_message(body).get("content")
    text = question if isinstance(question, str) else ""
    return Reply(text=f"answer to: {text}", delay=2.0)


def _last_message(body: dict[str, Any]) -> dict[str, Any]:
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    return messages[-1] if messages else {}


def _is_tool_result(message: dict[str, Any], wire: str) -> bool:
    if wire == "openai":
        return message.get("role") == "tool"
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_result" for part in content
    )


def _first_tool_name(body: dict[str, Any], wire: str) -> str | None:
    for tool in body.get("tools") or ():
        name = (tool.get("function") or {}).get("name") if wire == "openai" else tool.get("name")
        if name:
            return str(name)
    return None


def tool_then_answer_responder(body: dict[str, Any], wire: str) -> Action:
    """Call the request's first tool (arguments ``{}``); once a result is back, answer.

    Drives a whole ReAct turn (call → result → answer) without scripting each step.
    """
    name = _first_tool_name(body, wire)
    if name is None or _is_tool_result(_last_message(body), wire):
        return Reply(text="done")
    calls = sum(1 for m in body.get("messages") or () if isinstance(m, dict))
    return Reply(tool_calls=[ToolCall(id=f"call_scripted_{calls}", name=name, arguments="{}")])


RESPONDERS: dict[str, Responder] = {
    "echo": echo_responder,
    "long": long_responder,
    "tool_then_answer": tool_then_answer_responder,
    "slow": slow_responder,
}


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    total += len(part["text"])
                elif "content" in part:  # anthropic tool_result
                    total += _content_chars(part["content"])
            elif isinstance(part, str):
                total += len(part)
        return total
    return 0


def request_text_chars(body: dict[str, Any]) -> int:
    """Characters of message text in a request of either wire (system included).

    Counts string contents, text parts and tool results; not tool-call arguments,
    tool schemas or anything else.
    """
    total = _content_chars(body.get("system"))
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            total += _content_chars(message.get("content"))
    return total


def default_input_tokens(body: dict[str, Any]) -> int:
    """The input tokens the server reports unless a Reply says otherwise."""
    return request_text_chars(body) // 4 + 10


def _default_output_tokens(reply: Reply) -> int:
    chars = len(reply.text) + sum(len(call.arguments) for call in reply.tool_calls)
    return chars // 4 + 1


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------------------
# The server


class ScriptedLLMServer:
    """Real HTTP on 127.0.0.1 (free port), served from a daemon thread."""

    def __init__(self, port: int = 0, responder: Responder = echo_responder) -> None:
        self._port = port
        self.responder: Responder = responder
        self._queue: deque[Action] = deque()
        self._requests: list[RecordedRequest] = []
        self._cond = threading.Condition()
        self._cancel = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self.models: tuple[str, ...] = DEFAULT_MODELS  # what GET /v1/models lists

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        if self._httpd is not None:
            return self
        self._cancel.clear()
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.scripted = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"scripted-llm-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hangs and slow streams in flight are cut short."""
        httpd = self._httpd
        if httpd is None:
            return
        self._cancel.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- addresses ----------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("The server is not started.")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK appends ``/chat/completions`` to its base URL."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK appends ``/v1/messages`` to its base URL."""
        return self.url

    def base_url_for(self, provider: str) -> str:
        """The base_url a model channel of ``provider`` should use to reach this server."""
        return self.anthropic_base_url if provider == "anthropic" else self.openai_base_url

    # -- script and records -------------------------------------------------

    def enqueue(self, *actions: Action) -> None:
        with self._cond:
            self._queue.extend(actions)

    @property
    def pending(self) -> int:
        """Scripted items not yet consumed."""
        with self._cond:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._cond:
            return list(self._requests)

    def reset(self) -> None:
        """Forget requests and script, restore the default responder, cut hangs short."""
        with self._cond:
            self._queue.clear()
            self._requests.clear()
            self.responder = echo_responder
            self.models = DEFAULT_MODELS
        self._cancel.set()
        self._cancel = threading.Event()

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``n`` requests arrived; raise TimeoutError otherwise."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= n, timeout=timeout):
                raise TimeoutError(
                    f"Expected {n} LLM requests within {timeout}s, got {len(self._requests)}."
                )
            return list(self._requests)

    # -- used by the handler ------------------------------------------------

    def _record_and_pick(
        self, record: RecordedRequest, *, consume: bool = True
    ) -> tuple[Action, int, threading.Event]:
        with self._cond:
            self._requests.append(record)
            self._counter += 1
            number = self._counter
            action = self._queue.popleft() if consume and self._queue else None
            responder = self.responder
            cancel = self._cancel
            self._cond.notify_all()
        if action is None and not consume:
            action = Empty()
        if action is None:
            try:
                action = responder(record.body, record.wire)
            except Exception as exc:  # a broken responder must fail the test, not hang it
                message = f"The scripted responder raised {exc!r}"
                action = Fail(status=500, body={"error": {"message": message}})
        return action, number, cancel


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # never join a thread stuck in a Hang on stop()
    allow_reuse_address = True
    # socketserver's default backlog is 5: with hundreds of streams opening connections at
    # once (bench.ws_load) a SYN beyond it is dropped and retried by the client's TCP after
    # 1, 3, 7 s — seconds of latency no provider's endpoint adds
    request_queue_size = 1024
    scripted: ScriptedLLMServer


ROUTES: dict[str, Wire] = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}
MODELS_ROUTE = "/v1/models"  # both wires list their models here (GET)
DEFAULT_MODELS: tuple[str, ...] = ("scripted-model",)


def _models_page(wire: Wire, models: tuple[str, ...]) -> dict[str, Any]:
    """One page of ``GET /v1/models`` as each provider shapes it."""
    if wire == "anthropic":
        return {
            "data": [
                {
                    "type": "model",
                    "id": name,
                    "display_name": name,
                    "created_at": "2025-01-01T00:00:00Z",
                }
                for name in models
            ],
            "has_more": False,
            "first_id": models[0] if models else None,
            "last_id": models[-1] if models else None,
        }
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "scripted"} for name in models
        ],
    }


# API version 2026-10-21 (what anthropic SDK 2.x sends) answers 400 to sampling
# parameters, even at their defaults; the server does too, whatever is scripted.
_ANTHROPIC_SAMPLING = ("temperature", "top_p", "top_k")


def _anthropic_rejects(headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any] | None:
    if headers.get("anthropic-version", "") < "2026-10-21":
        return None
    for name in _ANTHROPIC_SAMPLING:
        if name in body:
            return {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"{name}: Extra inputs are not permitted",
                },
            }
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle kept-alive connection ends its thread after this
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: test output should show the test's own logs only."""

    # -- routing ------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path in ("/health", "/"):
            self._send_json(200, {"status": "ok"})
        elif path == MODELS_ROUTE:
            self._list_models(path)
        else:
            self._send_json(404, {"error": {"message": f"No route {self.path}"}})

    def _list_models(self, path: str) -> None:
        """``GET /v1/models`` on either wire (told apart by the ``anthropic-version``
        header): takes the next script item like any request; a ``Reply`` or ``Empty``
        (or the responder's answer) lists ``server.models``, a failure item fails it."""
        headers = {name.lower(): value for name, value in self.headers.items()}
        wire: Wire = "anthropic" if "anthropic-version" in headers else "openai"
        record = RecordedRequest(
            wire=wire, path=path, headers=headers, body={}, client_port=self.client_address[1]
        )
        scripted = self.server.scripted
        action, number, cancel = scripted._record_and_pick(record)
        self._cancel = cancel
        if isinstance(action, Reply | Empty):
            self._send_json(200, _models_page(wire, scripted.models), keep_alive=True)
        else:
            _Responder(self, wire, {}, number).respond(action)

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        wire = ROUTES.get(path)
        if wire is None:
            self._send_json(404, {"error": {"message": f"No route {path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "Request body is not JSON"}})
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        record = RecordedRequest(
            wire=wire, path=path, headers=headers, body=body, client_port=self.client_address[1]
        )
        rejected = _anthropic_rejects(headers, body) if wire == "anthropic" else None
        action, number, cancel = self.server.scripted._record_and_pick(
            record, consume=rejected is None
        )
        self._cancel = cancel
        if rejected is not None:  # the script is left for the next request
            action = Fail(status=400, body=rejected)
        _Responder(self, wire, body, number).respond(action)

    # -- low-level writers --------------------------------------------------

    def _send_json(
        self,
        status: int,
        payload: Any,
        extra: dict[str, str] | None = None,
        *,
        keep_alive: bool = False,
    ) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._connection_header(keep_alive)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, *, keep_alive: bool = False) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._connection_header(keep_alive)
        self.end_headers()

    def _connection_header(self, keep_alive: bool) -> None:
        self.send_header("Connection", "keep-alive" if keep_alive else "close")
        self.close_connection = not keep_alive

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """Close the socket abruptly, as a crashing proxy would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops or resets; True when cut short."""
        return self._cancel.wait(seconds) if seconds > 0 else False


class _Responder:
    """Turns one script item into bytes on one wire."""

    def __init__(self, handler: _Handler, wire: Wire, body: dict[str, Any], number: int) -> None:
        self.h = handler
        self.wire = wire
        self.body = body
        self.number = number
        self.model = str(body.get("model") or "scripted-model")
        self.streaming = bool(body.get("stream"))

    def respond(self, action: Action) -> None:
        try:
            if isinstance(action, Empty):
                action = Reply(text="", input_tokens=action.input_tokens)
            if isinstance(action, Reply):
                self._reply(action)
            elif isinstance(action, Fail):
                self._fail(action)
            elif isinstance(action, Hang):
                self.h._sleep(action.seconds)
                self.h._drop()
            elif isinstance(action, NonJSON):
                self._non_json(action)
            elif isinstance(action, Disconnect):
                self._disconnect(action)
            elif isinstance(action, StreamError):
                self._stream_error(action)
            else:
                raise TypeError(f"Unknown script item {action!r}")
        except (BrokenPipeError, ConnectionResetError):
            self.h.close_connection = True  # the client went away (e.g. its timeout)

    # -- items --------------------------------------------------------------

    def _reply(self, reply: Reply) -> None:
        if self.h._sleep(reply.delay):
            return  # the server stops
        input_tokens = (
            reply.input_tokens
            if reply.input_tokens is not None
            else default_input_tokens(self.body)
        )
        output_tokens = (
            reply.output_tokens
            if reply.output_tokens is not None
            else _default_output_tokens(reply)
        )
        if not self.streaming:
            builder = _openai_message if self.wire == "openai" else _anthropic_message
            self.h._send_json(
                200, builder(self, reply, input_tokens, output_tokens), keep_alive=True
            )
            return
        events = (
            _openai_events(self, reply, input_tokens, output_tokens)
            if self.wire == "openai"
            else _anthropic_events(self, reply, input_tokens, output_tokens)
        )
        self.h._start_stream(keep_alive=True)
        first = True
        for event in events:
            if not first and self.h._sleep(reply.delay_per_chunk):
                self.h._drop()
                return
            first = False
            self.h._write_chunk(event)
        self.h._end_stream()

    def _fail(self, fail: Fail) -> None:
        body: Any = fail.body
        if body is None:
            kind = {
                400: "invalid_request_error",
                401: "authentication_error",
                429: "rate_limit_error",
            }
            kind_name = kind.get(fail.status, "api_error")
            message = f"Scripted failure {fail.status}"
            if self.wire == "anthropic":
                body = {"type": "error", "error": {"type": kind_name, "message": message}}
            else:
                body = {
                    "error": {"message": message, "type": kind_name, "param": None, "code": None}
                }
        extra: dict[str, str] = {}
        if fail.should_retry is not None:
            extra["x-should-retry"] = "true" if fail.should_retry else "false"
        self.h._send_json(fail.status, body, extra)

    def _non_json(self, item: NonJSON) -> None:
        if not self.streaming:
            data = item.body.encode()
            self.h.send_response(200)
            self.h.send_header("Content-Type", "application/json")
            self.h.send_header("Content-Length", str(len(data)))
            self.h.send_header("Connection", "close")
            self.h.end_headers()
            self.h.wfile.write(data)
            self.h.close_connection = True
            return
        self.h._start_stream()
        if self.wire == "anthropic":
            self.h._write_chunk(f"event: message_start\ndata: {item.body}\n\n".encode())
        else:
            self.h._write_chunk(f"data: {item.body}\n\n".encode())
        self.h._end_stream()

    def _stream_error(self, item: StreamError) -> None:
        if self.wire == "anthropic":
            payload = {"type": "error", "error": {"type": item.kind, "message": item.message}}
        else:
            payload = {"error": {"message": item.message, "type": item.kind, "code": None}}
        if not self.streaming:
            status = _STATUS_FOR_KIND.get(item.kind, 500)
            self._fail(Fail(status=status, body=payload))
            return
        reply = Reply(text="partial answer before the error", chunk_size=8)
        events = (
            _openai_events(self, reply, 10, 10)
            if self.wire == "openai"
            else _anthropic_events(self, reply, 10, 10)
        )
        self.h._start_stream()
        for index, event in enumerate(events):
            if index >= item.after_events:
                break
            self.h._write_chunk(event)
        if self.wire == "anthropic":
            self.h._write_chunk(_sse("error", payload))
        else:
            self.h._write_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.h._end_stream()

    def _disconnect(self, item: Disconnect) -> None:
        reply = Reply(text=item.text, chunk_size=8)
        if not self.streaming:
            builder = _openai_message if self.wire == "openai" else _anthropic_message
            data = json.dumps(builder(self, reply, 10, 10)).encode()
            self.h.send_response(200)
            self.h.send_header("Content-Type", "application/json")
            self.h.send_header("Content-Length", str(len(data) + 1000))
            self.h.end_headers()
            self.h.wfile.write(data[: len(data) // 2])
            self.h._drop()
            return
        events = (
            _openai_events(self, reply, 10, 10)
            if self.wire == "openai"
            else _anthropic_events(self, reply, 10, 10)
        )
        self.h._start_stream()
        for index, event in enumerate(events):
            if index >= item.after_events:
                break
            self.h._write_chunk(event)
        self.h._drop()


_STATUS_FOR_KIND = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "authentication_error": 401,
    "invalid_request_error": 400,
}

# ---------------------------------------------------------------------------
# OpenAI wire


def _finish_reason(reply: Reply) -> str:
    if reply.stop:
        return reply.stop
    return "tool_calls" if reply.tool_calls else "stop"


def _openai_usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _openai_message(r: _Responder, reply: Reply, inp: int, out: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
    else:
        message["content"] = reply.text
    payload: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{r.number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": r.model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
    }
    if reply.send_usage:
        payload["usage"] = _openai_usage(inp, out)
    return payload


def _openai_events(r: _Responder, reply: Reply, inp: int, out: int) -> Iterator[bytes]:
    include_usage = bool((r.body.get("stream_options") or {}).get("include_usage"))
    include_usage = include_usage and reply.send_usage
    base = {
        "id": f"chatcmpl-scripted-{r.number}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": r.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        payload: dict[str, Any] = {
            **base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if include_usage:
            payload["usage"] = None
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for piece in _chunks(reply.text, reply.chunk_size):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _chunks(call.arguments, reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    if include_usage:
        usage_chunk = {**base, "choices": [], "usage": _openai_usage(inp, out)}
        yield b"data: " + json.dumps(usage_chunk).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


# ---------------------------------------------------------------------------
# Anthropic wire

_ANTHROPIC_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _anthropic_stop(reply: Reply) -> str:
    reason = _finish_reason(reply)
    return _ANTHROPIC_STOP.get(reason, reason)


def _tool_input(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments or "{}")
    except ValueError:
        return {}


def _anthropic_message(r: _Responder, reply: Reply, inp: int, out: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        content.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)}
        )
    return {
        "id": f"msg_scripted_{r.number}",
        "type": "message",
        "role": "assistant",
        "model": r.model,
        "content": content,
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out},
    }


def _sse(event: str, payload: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode()


def _anthropic_events(r: _Responder, reply: Reply, inp: int, out: int) -> Iterator[bytes]:
    start_usage = {"input_tokens": inp if reply.send_usage else 0, "output_tokens": 1}
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_scripted_{r.number}",
                "type": "message",
                "role": "assistant",
                "model": r.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    yield _sse("ping", {"type": "ping"})
    index = 0
    if reply.text:
        yield _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
        for piece in _chunks(reply.text, reply.chunk_size):
            yield _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                },
            )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    for call in reply.tool_calls:
        yield _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": {},
                },
            },
        )
        for piece in _chunks(call.arguments, reply.chunk_size):
            yield _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
            "usage": {"output_tokens": out},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


# ---------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted (benchmarks, subprocess servers); prints the URL first."""
    parser = argparse.ArgumentParser(prog="python -m scripted_llm")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--responder", choices=sorted(RESPONDERS), default="echo")
    args = parser.parse_args(argv)
    server = ScriptedLLMServer(port=args.port, responder=RESPONDERS[args.responder]).start()
    print(f"scripted LLM server listening on {server.url}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())  # a parent's terminate() stops cleanly
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
