"""``POST /v1/chat/completions`` and ``GET /v1/models``: NetaClaw's agents behind the OpenAI
chat-completions API (issue 26 item 9; CONTRACT §8), for any OpenAI client or chat front end.

``model`` names an agent the user may use; ``Authorization: Bearer <token>`` carries the
user's API token (``POST /api/auth/token/``, with the REST API's expiry). A bearer token is
no cookie, so there is no CSRF check and no session login; every other check is the REST
API's. The agent runs a real turn of a chat — its tools, compaction and recall — on
whichever runner runs turns (``runs.runner``), and the answer names that chat (the
``X-NetaClaw-Session`` header, ``netaclaw.sessionId`` in the body); which chat a request
goes to is ``web.openai_chats``'s rule.

Async views: the request waits for its turn's events on a channel of its own
(``web.openai_turns``), not in a thread; its database work goes through Django's
``sync_to_async`` (the request's thread, its connection closed with the request, as every
Django async view does). A client that goes away before the turn ends stops it, as Stop
does on the chat page.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from agents.broadcast import apublish_to_owner
from agents.leases import TURN, lease_seconds, new_holder
from runs import runner
from web.openai_chats import StartedTurn, model_ids, start_turn, token_user, turn_usage
from web.openai_turns import AnswerText, SessionEvents, answer_pieces
from web.openai_wire import (
    EXTENSION_FIELD,
    SESSION_HEADER,
    SSE_DONE,
    SSE_KEEPALIVE,
    Answer,
    CompletionRequest,
    OpenAIError,
    bad_request,
    models_list,
    parse_completion_request,
    sse,
)

logger = logging.getLogger(__name__)

# A turn gives the chat's lease back a moment after its last event (``turn_done``): a
# client that sends its next message at once may find the chat busy for those few
# milliseconds. Such a request tries again for up to BUSY_GRACE_SECONDS before its 409.
BUSY_GRACE_SECONDS = 1.0
BUSY_RETRY_SECONDS = 0.05

# Tasks started by requests, kept until they end (the loop holds only weak references).
_detaching: set[asyncio.Task[None]] = set()


def _error(err: OpenAIError, session_id: str = "") -> JsonResponse:
    body = err.body()
    headers = {}
    if session_id:
        body[EXTENSION_FIELD] = {"sessionId": session_id}
        headers[SESSION_HEADER] = session_id
    if err.status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="netaclaw"'
    if err.status == 409:
        headers["Retry-After"] = "1"
    return JsonResponse(body, status=err.status, headers=headers)


def _bearer(request: HttpRequest) -> str:
    scheme, _, key = request.headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise OpenAIError(
            401, "invalid_api_key", "Send the API token as 'Authorization: Bearer <token>'."
        )
    return key.strip()


async def _user(request: HttpRequest) -> Any:
    return await sync_to_async(token_user)(_bearer(request))


def _json_body(request: HttpRequest) -> Any:
    try:
        raw = request.body
    except RequestDataTooBig:
        raise OpenAIError(413, "request_too_large", "The request body is too large.") from None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_request(f"the body is not JSON: {exc}", code="invalid_json") from None
    except RecursionError:
        raise bad_request("the JSON is nested too deeply", code="invalid_json") from None


def _method_not_allowed(allowed: str) -> JsonResponse:
    err = OpenAIError(405, "method_not_allowed", f"Use {allowed}.")
    response = _error(err)
    response["Allow"] = allowed
    return response


@login_not_required
@csrf_exempt
@never_cache
async def models(request: HttpRequest) -> HttpResponse:
    """The agents the token's user may use, as OpenAI models (front ends list them)."""
    try:
        user = await _user(request)  # the REST API's order: who first, then what
    except OpenAIError as err:
        return _error(err)
    if request.method != "GET":
        return _method_not_allowed("GET")
    ids = await sync_to_async(model_ids)(user=user)
    return JsonResponse(models_list(ids))


@login_not_required
@csrf_exempt
@never_cache
async def chat_completions(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """One turn of an agent, answered as a ``chat.completion`` or streamed as
    ``chat.completion.chunk`` events."""
    try:
        user = await _user(request)
    except OpenAIError as err:
        return _error(err)
    if request.method != "POST":
        return _method_not_allowed("POST")
    try:
        wanted = parse_completion_request(
            _json_body(request), header_session=request.headers.get(SESSION_HEADER)
        )
    except OpenAIError as err:
        return _error(err)
    events = await SessionEvents.open()
    try:
        started = await _start(user, wanted, events)
    except OpenAIError as err:
        await events.close()
        return _error(err)
    except BaseException:
        await events.close()
        raise
    answer = Answer(wanted.model, started.session_id, started.created_chat)
    if wanted.stream:
        response = StreamingHttpResponse(
            _streamed(user, wanted, started, answer, events), content_type="text/event-stream"
        )
        response["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
        response[SESSION_HEADER] = started.session_id
        return response
    return await _complete(user, started, answer, events)


async def _start(user: Any, wanted: CompletionRequest, events: SessionEvents) -> StartedTurn:
    """The message stored with its turn (``web.openai_chats``), then handed to the runner;
    the socket layer does the same for a ``chat`` frame."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_GRACE_SECONDS
    while True:
        try:
            started = await sync_to_async(start_turn)(
                user=user,
                request=wanted,
                holder=new_holder(TURN),
                lease_seconds=lease_seconds(),
                defer=runner.turn_deferrer(),
                reply_to=events.channel,
                join=events.join,
            )
            break
        except OpenAIError as err:
            if err.code != "turn_in_progress" or loop.time() >= deadline:
                raise
        await asyncio.sleep(BUSY_RETRY_SECONDS)
    if started.accepted.renamed is not None:
        await apublish_to_owner(user.pk, started.accepted.renamed)
    await _detached(runner.submit_chat(started.accepted, events.channel))
    return started


def _detached(work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    """``work`` as a task in a context of its own, as a socket's would run. A view's
    context holds the request's thread executors (Django runs the async view through
    ``async_to_sync`` while a middleware is sync-only): a turn the in-process runner starts
    from it would inherit them, and its database calls would fail once the view returned
    (a streamed answer returns at once)."""
    task = asyncio.get_running_loop().create_task(work, context=contextvars.Context())
    _detaching.add(task)
    task.add_done_callback(_detaching.discard)
    return task


def _stop_later(user: Any, session_id: str) -> None:
    """The client went away mid-turn: stop the turn, as the page's Stop does (in a task of
    its own: the request's is being cancelled)."""
    _detached(_stop(user, session_id))


async def _stop(user: Any, session_id: str) -> None:
    await runner.request_stop(user, session_id)


async def _complete(
    user: Any, started: StartedTurn, answer: Answer, events: SessionEvents
) -> HttpResponse:
    text = AnswerText()
    try:
        async for _piece in answer_pieces(events, text):
            pass
    finally:
        if text.end is None:
            _stop_later(user, started.session_id)
        await events.close()
    assert text.end is not None
    if text.end.error is not None:
        return _error(text.end.error, started.session_id)
    usage = await sync_to_async(turn_usage)(session_id=started.session_id, turn_id=text.turn_id)
    body = answer.completion(text.content, text.end.finish_reason, usage)
    return JsonResponse(body, headers={SESSION_HEADER: started.session_id})


async def _streamed(
    user: Any,
    wanted: CompletionRequest,
    started: StartedTurn,
    answer: Answer,
    events: SessionEvents,
) -> AsyncIterator[bytes]:
    """The role first, then the text as it streams, then the finish reason (and the usage,
    when asked for), then ``[DONE]``; a turn that fails ends with an ``error`` event."""
    text = AnswerText()
    try:
        yield sse(answer.chunk({"role": "assistant", "content": ""}, extension=True))
        async for piece in answer_pieces(events, text):
            yield SSE_KEEPALIVE if piece is None else sse(answer.chunk({"content": piece}))
    finally:
        if text.end is None:
            _stop_later(user, started.session_id)
        await events.close()
    assert text.end is not None
    if text.end.error is not None:
        yield sse({**text.end.error.body(), EXTENSION_FIELD: answer.extension()})
        return
    yield sse(answer.chunk({}, text.end.finish_reason, extension=True))
    if wanted.include_usage:
        usage = await sync_to_async(turn_usage)(session_id=started.session_id, turn_id=text.turn_id)
        yield sse(answer.usage_chunk(usage))
    yield SSE_DONE
