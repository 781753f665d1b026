"""Security: authentication everywhere, isolation between users, inert hostile content, CSRF.

* Every URL the resolver knows (walked, not listed by hand, so a new page is covered
  the day it is added) refuses an anonymous visitor unless it is on a short, explicit
  allow-list (login, password reset, the token login endpoint); so do both sockets.
* One user can never read or act on another user's session, messages or summaries,
  through pages, the summary drawer fragment, REST or the socket — and what is
  refused looks exactly like what does not exist.
* Script in user messages, assistant Markdown, tool output, tool calls, summaries,
  titles and agent names renders inert: on the chat page (both views), the session
  list, the summary drawer and page, and the socket's HTML fragments.
* CSRF is enforced on every form and HTMX post and on cookie-authenticated API writes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agents.broadcast import apublish
from agents.events import (
    CompactionFailed,
    Delta,
    ErrorEvent,
    MessageStored,
)
from agents.models import ChatSession, Message
from agents.services import compaction_apply, message_append
from channels_app.html_encoder import render_event_html
from channels_app.routing import websocket_urlpatterns
from system.dictionary import dict_set
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import fill_history
from tests.support.html_audit import HtmlAudit
from tests.support.sockets import connect, receive, receive_until, send
from tests.support.summaries import SEED_SUMMARY

ALICE_SECRET = "alice-private-plan-7c1e"
BOB_SECRET = "bob-private-diary-93af"
ALICE_KEY = "sk-alice-channel-key-0f4b2d9a"

# Marked so an assertion can tell our payload from the page's own markup.
XSS = (
    '<script>alert("xss-1")</script>'
    '<img src="xss:2" onerror="alert(2)">'
    "[click me](javascript:alert(3)) "
    '<a href="javascript:alert(4)">link</a>'
    "<svg onload=alert(5)></svg>"
    '" onmouseover="alert(6)" x="'
    '<iframe src="javascript:alert(7)"></iframe>'
    "<a href=' JaVaScRiPt:alert(8)'>spaced</a>"
    "![img](javascript:alert(9))"
)

# URLs anyone may open: logging in and resetting a forgotten password (Django's own views).
PUBLIC_URL_NAMES = {
    "login",
    "password_reset",
    "password_reset_done",
    "password_reset_confirm",
    "password_reset_complete",
    "admin:login",
    "api:auth-token",
    # probes for load balancers (CONTRACT §8): they say only whether a part is up
    "healthz",
    "readyz",
}


def _walk(patterns: list[Any], prefix: str = "", ns: str = "") -> Iterator[tuple[str, str]]:
    for p in patterns:
        if isinstance(p, URLResolver):
            inner_ns = f"{ns}{p.namespace}:" if p.namespace else ns
            yield from _walk(p.url_patterns, prefix + str(p.pattern), inner_ns)
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), f"{ns}{p.name}" if p.name else ""


def _concrete(route: str, values: dict[str, str]) -> str | None:
    """A real path for a route, filling each converter with a real id of the right kind."""
    if "(?P<app_label>" in route:
        route = re.sub(r"\^?\(\?P<app_label>[^)]*\)/?\$?", "agents/", route)
    route = route.replace("(?P<url>.*)$", "no-such-admin-page/")

    def fill(match: re.Match[str]) -> str:
        converter, name = match.group(1) or "str", match.group(2)
        return values.get(name) or {"int": "1", "uuid": str(uuid.uuid4())}.get(converter, "1")

    path = "/" + re.sub(r"<(?:(\w+):)?(\w+)>", fill, route)
    return None if "(?" in path or "^" in path else path


@pytest.fixture
def world(db) -> dict[str, Any]:
    """Alice's private agent, channel and session (with a summary); Bob's session."""
    alice, bob, staff = make_user("alice"), make_user("bob"), make_user("root", is_staff=True)
    channel = make_channel(name="alice channel", api_key=ALICE_KEY, is_auxiliary=True)
    agent = make_agent(name="alice agent", owner=alice, model_channel=channel)
    session = make_session(owner=alice, agent=agent, title="alice chat")
    messages = [
        message_append(session=session, role="user", content=f"{ALICE_SECRET} {i}")
        for i in range(4)
    ]
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[:2]],
        pruned_ids=[],
        summary_content=f"## 目标\n{ALICE_SECRET} summary",
        pruned_token_estimate=0,
        event_content="compacted",
        event_payload={"status": "done", "removedCount": 2},
    )
    bob_session = make_session(owner=bob, agent=make_agent(name="bob agent", owner=bob))
    message_append(session=bob_session, role="user", content=BOB_SECRET)
    entry = dict_set(type_key="netaclaw", name="default_auxiliary_channel_id", value="1")
    return {
        "alice": alice,
        "bob": bob,
        "staff": staff,
        "channel": channel,
        "agent": agent,
        "session": session,
        "summary": applied.summary_message,
        "first_message": messages[2],
        "bob_session": bob_session,
        "dict_entry": entry,
    }


def _route_values(world: dict[str, Any]) -> dict[str, str]:
    return {
        "session_id": str(world["session"].pk),
        "message_id": str(world["summary"].pk),
        "agent_id": str(world["agent"].pk),
        "channel_id": str(world["channel"].pk),
        "entry_id": str(world["dict_entry"].pk),
        "object_id": "1",
        "content_type_id": "1",
        "id": str(world["alice"].pk),
    }


def _all_urls(world: dict[str, Any]) -> list[tuple[str, str]]:
    urls = []
    for route, name in _walk(get_resolver().url_patterns):
        path = _concrete(route, _route_values(world))
        assert path is not None, f"cannot fill route {route!r}: teach _concrete its converter"
        urls.append((path, name))
    return urls


# ---------------------------------------------------------------------------
# authentication


def test_the_resolver_walk_finds_every_kind_of_url(world) -> None:
    paths = {path for path, _ in _all_urls(world)}
    sid = world["session"].pk
    for expected in (
        "/chat/",
        f"/chat/{sid}/",
        f"/chat/{sid}/summary/{world['summary'].pk}/",
        "/channels/new/",
        f"/api/sessions/{sid}/compact/",
        "/api/schema/",
        "/admin/agents/message/",
    ):
        assert expected in paths, expected


@pytest.mark.parametrize("method", ["get", "post"])
def test_every_url_refuses_an_anonymous_visitor(world, method: str) -> None:
    client = Client()
    checked = 0
    for path, name in _all_urls(world):
        if name in PUBLIC_URL_NAMES:
            continue
        response = getattr(client, method)(path)
        checked += 1
        body = response.content.decode(errors="replace")
        assert ALICE_SECRET not in body and ALICE_KEY not in body, path
        if path.startswith(("/api/", "/v1/")):  # the REST API and the OpenAI-compatible one
            assert response.status_code in (401, 403), (path, response.status_code)
            if name != "api:schema":  # the schema view renders its refusal as OpenAPI YAML
                assert response["Content-Type"].startswith("application/json"), path
            continue
        assert response.status_code == 302, (method, path, response.status_code)
        location = response["Location"]
        assert location.startswith(("/accounts/login/", "/admin/login/")), (path, location)
    assert checked > 80


def test_the_public_allow_list_is_what_it_claims(world) -> None:
    """The allow-listed URLs exist (a renamed view cannot silently widen the list)."""
    names = {name for _, name in _all_urls(world)}
    assert names >= PUBLIC_URL_NAMES


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_every_api_endpoint_refuses_anonymous_writes(world, method: str) -> None:
    client = APIClient()
    for path, name in _all_urls(world):
        if not path.startswith(("/api/", "/v1/")) or name in PUBLIC_URL_NAMES:
            continue
        response = getattr(client, method)(path, {"name": "x"}, format="json")
        assert response.status_code in (401, 403), (method, path, response.status_code)


def test_a_wrong_token_is_refused_by_every_api_endpoint(world) -> None:
    for scheme in ("Token", "Bearer"):  # the REST API's, the OpenAI-compatible API's
        client = APIClient(HTTP_AUTHORIZATION=f"{scheme} " + "0" * 40)
        for path, name in _all_urls(world):
            if path.startswith(("/api/", "/v1/")) and name not in PUBLIC_URL_NAMES:
                for method in ("get", "post"):
                    response = getattr(client, method)(path)
                    assert response.status_code in (401, 403), (scheme, path, method)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", [str(p.pattern) for p in websocket_urlpatterns])
async def test_every_socket_refuses_missing_or_wrong_credentials(route: str) -> None:
    @database_sync_to_async
    def cookie_and_token() -> tuple[str, str]:
        user = make_user()
        client = Client()
        client.force_login(user)
        cookie = (
            f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        )
        return cookie, Token.objects.create(user=user).key

    cookie, token = await cookie_and_token()
    path = "/" + route
    refused = [
        {},  # nothing at all
        {"origin": None},
        {"cookie": f"{settings.SESSION_COOKIE_NAME}=forged"},
        {"token": "0" * 40, "origin": None},
        {"token": "", "origin": None},
        {"cookie": cookie, "origin": b"http://evil.example"},  # cross-site hijacking
        {"cookie": cookie, "origin": None},
        {"token": token, "origin": b"http://evil.example"},
        {"cookie": cookie, "origin": b"http://localhost.evil.example"},
    ]
    for options in refused:
        communicator, connected = await connect(path=path, **options)
        assert not connected, (path, options)
        await communicator.disconnect()
    for options in ({"cookie": cookie}, {"token": token, "origin": None}):
        communicator, connected = await connect(path=path, **options)
        assert connected, (path, options)
        await communicator.disconnect()


# ---------------------------------------------------------------------------
# isolation between users


def _bob_pages(world: dict[str, Any]) -> list[str]:
    sid, summary = world["session"].pk, world["summary"].pk
    own = world["bob_session"].pk
    return [
        f"/chat/{sid}/",
        f"/chat/{sid}/?view=full",
        f"/chat/{sid}/?view=compacted",
        f"/chat/{sid}/messages/?before={world['first_message'].pk}",
        f"/chat/{sid}/messages/?before={world['first_message'].pk}&view=full",
        f"/chat/{sid}/summary/{summary}/",
        # his own session id with her summary / message ids: still nothing
        f"/chat/{own}/summary/{summary}/",
        f"/chat/{own}/messages/?before={world['first_message'].pk}",
        f"/agents/{world['agent'].pk}/",
    ]


def test_pages_and_the_summary_drawer_never_show_another_users_session(world) -> None:
    client = Client()
    client.force_login(world["bob"])
    for url in _bob_pages(world):
        for headers in ({}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "summary-drawer"}):
            response = client.get(url, **headers)
            assert response.status_code == 404, (url, headers, response.status_code)
            assert ALICE_SECRET not in response.content.decode(), url
    for page in ("/chat/", f"/chat/{world['bob_session'].pk}/", "/agents/"):
        body = client.get(page).content.decode()
        assert ALICE_SECRET not in body and str(world["session"].pk) not in body, page
        assert "alice chat" not in body and "alice agent" not in body, page


def test_pages_refuse_acting_on_another_users_session(world) -> None:
    client = Client()
    client.force_login(world["bob"])
    before = ChatSession.objects.count()
    response = client.post("/chat/new/", {"from_session": str(world["session"].pk)})
    assert response.status_code == 404
    response = client.post("/chat/new/", {"agent": world["agent"].pk})  # her private agent
    assert response.status_code == 302 and response["Location"] == "/chat/"
    response = client.post(f"/agents/{world['agent'].pk}/", {"name": "taken over"})
    assert response.status_code == 404
    assert ChatSession.objects.count() == before
    world["agent"].refresh_from_db()
    assert world["agent"].name == "alice agent"


def test_rest_never_reads_or_acts_on_another_users_session(world) -> None:
    api = APIClient()
    api.force_authenticate(world["bob"])
    sid = world["session"].pk
    listed = api.get("/api/sessions/").json()
    assert [s["id"] for s in listed] == [str(world["bob_session"].pk)]
    not_found = None
    for method, url, body in [
        ("get", f"/api/sessions/{sid}/", None),
        ("get", f"/api/sessions/{sid}/messages/", None),
        ("get", f"/api/sessions/{sid}/messages/?view=full", None),
        ("post", f"/api/sessions/{sid}/compact/", {}),
        ("post", f"/api/sessions/{sid}/compact/", {"instructions": "leak it"}),
        ("get", f"/api/agents/{world['agent'].pk}/", None),
        ("patch", f"/api/agents/{world['agent'].pk}/", {"name": "mine now"}),
    ]:
        response = getattr(api, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code)
        text = response.content.decode()
        assert ALICE_SECRET not in text and ALICE_KEY not in text
        if "/sessions/" in url:
            shape = (response.status_code, response.json().keys())
            not_found = not_found or shape
    # a foreign id answers exactly like an id that never existed
    ghost = api.get(f"/api/sessions/{uuid.uuid4()}/messages/")
    assert ghost.status_code == 404
    mine = api.get(f"/api/sessions/{sid}/messages/")
    assert mine.json() == ghost.json()
    response = api.post("/api/sessions/", {"agent": world["agent"].pk}, format="json")
    assert response.status_code == 400, "a private agent of someone else cannot be used"
    world["session"].refresh_from_db()
    assert world["session"].compaction_count == 1
    assert Message.objects.filter(session=world["session"]).count() == 6


def test_staff_only_endpoints_refuse_ordinary_users(world) -> None:
    api = APIClient()
    api.force_authenticate(world["bob"])
    for url in (
        "/api/model-channels/",
        f"/api/model-channels/{world['channel'].pk}/",
        "/api/dict-info/",
        f"/api/dict-info/{world['dict_entry'].pk}/",
    ):
        assert api.get(url).status_code == 403, url
        assert ALICE_KEY not in api.get(url).content.decode()
    client = Client()
    client.force_login(world["bob"])
    for url in ("/channels/", "/channels/new/", f"/channels/{world['channel'].pk}/", "/admin/"):
        response = client.get(url)
        assert response.status_code in (302, 403), url
        assert ALICE_KEY not in response.content.decode()


@pytest.mark.django_db(transaction=True)
async def test_the_socket_never_joins_or_leaks_another_users_session(channel_layer) -> None:
    @database_sync_to_async
    def setup() -> tuple[str, str, str]:
        alice, bob = make_user(), make_user()
        session = make_session(owner=alice)
        message_append(session=session, role="user", content=ALICE_SECRET)
        return str(session.pk), Token.objects.create(user=bob).key, str(alice.pk)

    sid, bob_token, _ = await setup()
    json_socket, ok = await connect(token=bob_token, origin=None)
    assert ok
    html_socket, ok = await connect(path=f"/ws/chat/html/?session={sid}", token=bob_token)
    assert ok
    refusal = await html_socket.receive_from(timeout=5)  # the page is told: no such chat
    assert ALICE_SECRET not in refusal and 'id="notices"' in refusal, refusal
    for frame in (
        {"type": "chat", "sessionId": sid, "content": "hi"},
        {"type": "compact", "sessionId": sid},
        {"type": "chat", "sessionId": sid.upper(), "content": "hi"},
        {"type": "chat", "sessionId": sid.replace("-", ""), "content": "hi"},
        {"type": "compact", "sessionId": f"  {sid}  "},
    ):
        await send(json_socket, frame)
        event = await receive(json_socket)
        assert event["type"] == "error" and event["reason"] == "unknown_session", event
    # an event of her session, broadcast to its group, reaches neither of his sockets
    await apublish(sid, MessageStored(sid, {"id": 1, "role": "user", "content": ALICE_SECRET}))
    await apublish(sid, Delta(sid, ALICE_SECRET))
    assert await json_socket.receive_nothing(timeout=0.3)
    assert await html_socket.receive_nothing(timeout=0.3)
    await json_socket.disconnect()
    await html_socket.disconnect()


# ---------------------------------------------------------------------------
# hostile content renders inert


@pytest.fixture
def hostile(db) -> dict[str, Any]:
    alice = make_user("alice")
    channel = make_channel(name=XSS[:90], api_key=ALICE_KEY)
    agent = make_agent(name=XSS[:90], owner=alice, model_channel=channel)
    session = make_session(owner=alice, agent=agent, title=XSS[:190])
    clean = make_session(owner=alice, agent=make_agent(name="plain"), title="plain")
    message_append(session=clean, role="user", content="hello")
    rows = [
        message_append(session=session, role="user", content=XSS),
        message_append(
            session=session,
            role="assistant",
            content=f"Here:\n\n{XSS}\n\n```html\n{XSS}\n```",
            tool_calls=[{"id": "c1", "name": "read_file", "arguments": XSS}],
        ),
        message_append(
            session=session,
            role="tool",
            content=XSS,
            tool_call_id="c1",
            metadata={"toolName": XSS[:60], "isError": True},
        ),
        message_append(session=session, role="assistant", content=XSS),
        message_append(session=session, role="user", content="next"),
    ]
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in rows[:2]],
        pruned_ids=[rows[2].pk],
        summary_content=f"[CONTEXT COMPACTION] {XSS}\n## 目标\n{XSS}",
        pruned_token_estimate=5,
        event_content=XSS,
        event_payload={"status": "done", "removedCount": 2, "error": XSS},
    )
    return {"alice": alice, "session": session, "clean": clean, "rows": rows, "applied": applied}


def _assert_inert(html: str, baseline: HtmlAudit, where: str) -> None:
    audit = HtmlAudit.of(html)
    assert not audit.handlers, (where, audit.handlers[:3])
    assert not audit.script_urls, (where, audit.script_urls[:3])
    own_scripts = {src for src, _ in baseline.scripts}
    for src, text in audit.scripts:
        assert "xss" not in text and "alert(" not in text, (where, text[:200])
        assert src in own_scripts, (where, src)
    extra = (audit.tag_names() & HtmlAudit.ACTIVE_TAGS) - baseline.tag_names()
    assert not extra, (where, extra)
    for tag, attrs in audit.tags:
        assert not (tag == "img" and (attrs.get("src") or "").startswith("xss")), where


def test_script_in_messages_tool_output_and_summaries_renders_inert(hostile) -> None:
    client = Client()
    client.force_login(hostile["alice"])
    baseline = HtmlAudit.of(client.get(f"/chat/{hostile['clean'].pk}/").content.decode())
    assert baseline.scripts, "the page's own scripts are the baseline"
    sid = hostile["session"].pk
    summary = hostile["applied"].summary_message.pk
    pages = {
        "compacted view": f"/chat/{sid}/",
        "full view": f"/chat/{sid}/?view=full",
        "session list": "/chat/",
        "summary page": f"/chat/{sid}/summary/{summary}/",
        "earlier page": f"/chat/{sid}/messages/?before={hostile['rows'][-1].pk}&view=full",
        "agents": "/agents/",
    }
    for where, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, where
        _assert_inert(response.content.decode(), baseline, where)
    drawer = client.get(pages["summary page"], HTTP_HX_REQUEST="true")
    assert drawer.status_code == 200 and 'role="dialog"' in drawer.content.decode()
    _assert_inert(drawer.content.decode(), baseline, "summary drawer")
    # the payload is there, as text
    full = client.get(pages["full view"]).content.decode()
    assert "&lt;script&gt;alert(&quot;xss-1&quot;)&lt;/script&gt;" in full


def test_socket_html_fragments_render_hostile_content_inert(hostile) -> None:
    from agents.message_format import message_to_json

    client = Client()
    client.force_login(hostile["alice"])
    baseline = HtmlAudit.of(client.get(f"/chat/{hostile['clean'].pk}/").content.decode())
    sid = str(hostile["session"].pk)
    stored = Message.objects.filter(session=hostile["session"])
    events: list[Any] = [MessageStored(sid, message_to_json(m)) for m in stored]
    events += [
        Delta(sid, XSS),
        ErrorEvent(XSS, "internal_error", sid),
        ErrorEvent(XSS, XSS, sid),
        CompactionFailed(sid, XSS, "upstream_error"),
    ]
    for language in ("zh-hans", "en"):
        for event in events:
            html = render_event_html(event, language=language)
            _assert_inert(html, baseline, f"{event.type} fragment")


# ---------------------------------------------------------------------------
# CSRF


def _csrf_client(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _csrf_token(client: Client) -> str:
    client.get("/chat/")  # any page sets the cookie (the token is also in hx-headers)
    return client.cookies[settings.CSRF_COOKIE_NAME].value


def test_csrf_is_enforced_on_form_and_htmx_posts(world) -> None:
    alice, staff = world["alice"], world["staff"]
    sid, agent = str(world["session"].pk), world["agent"]
    posts = [
        (alice, "/chat/new/", {"agent": agent.pk}),
        (alice, "/chat/new/", {"from_session": sid}),
        (alice, f"/chat/{sid}/rename/", {"title": "renamed by a forged form"}),
        (alice, f"/chat/{sid}/delete/", {}),
        (alice, f"/agents/{agent.pk}/", {"name": "renamed by a forged form"}),
        (alice, "/i18n/setlang/", {"language": "en"}),
        (alice, "/accounts/logout/", {}),
        (alice, "/accounts/password_change/", {"old_password": "x"}),
        (staff, "/channels/new/", {"name": "forged", "provider": "openai"}),
        (staff, f"/channels/{world['channel'].pk}/", {"name": "forged"}),
        (staff, f"/admin/agents/agent/{agent.pk}/change/", {"name": "forged"}),
    ]
    sessions, channels = ChatSession.objects.count(), world["channel"].name
    for user, url, data in posts:
        client = _csrf_client(user)
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = client.post(url, data, **headers)
            assert response.status_code == 403, (url, headers, response.status_code)
        # a token from another user's session is no better than none
        response = client.post(url, data, HTTP_X_CSRFTOKEN="a" * 32, HTTP_HX_REQUEST="true")
        assert response.status_code == 403, url
    assert ChatSession.objects.count() == sessions
    agent.refresh_from_db()
    world["channel"].refresh_from_db()
    assert agent.name == "alice agent" and world["channel"].name == channels
    # the control: the same htmx post with the page's token goes through (to the page of a
    # new chat, which is stored with its first message: issue 16)
    client = _csrf_client(alice)
    token = _csrf_token(client)
    response = client.post(
        "/chat/new/", {"agent": agent.pk}, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 200
    assert response.headers.get("HX-Redirect") == f"/chat/new/?agent={agent.pk}"
    response = client.post(f"/chat/{sid}/rename/", {"title": "renamed"}, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 302
    world["session"].refresh_from_db()
    assert world["session"].title == "renamed"


def test_csrf_is_enforced_on_cookie_authenticated_api_writes(world) -> None:
    alice, sid = world["alice"], world["session"].pk
    writes = [
        ("post", "/api/sessions/", {"agent": world["agent"].pk}),
        ("post", f"/api/sessions/{sid}/compact/", {}),
        ("patch", f"/api/agents/{world['agent'].pk}/", {"name": "forged"}),
        ("post", "/api/agents/", {"name": "forged"}),
    ]
    client = _csrf_client(alice)
    sessions = ChatSession.objects.count()
    for method, url, body in writes:
        response = getattr(client, method)(url, body, content_type="application/json")
        assert response.status_code == 403, (url, response.status_code)
        assert "CSRF" in response.content.decode(), url
    assert ChatSession.objects.count() == sessions
    token = _csrf_token(client)
    response = client.post(
        "/api/sessions/",
        {"agent": world["agent"].pk},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 201
    # programs with a token header need no CSRF token (a page cannot set that header)
    api = APIClient(enforce_csrf_checks=True)
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    assert (
        api.post("/api/sessions/", {"agent": world["agent"].pk}, format="json").status_code == 201
    )


# ---------------------------------------------------------------------------
# API keys never leave the database


MAIN_KEY = "sk-main-channel-key-6b8e1f0c2d"
AUX_KEY = "sk-aux-channel-key-9d3a7c5e1b"


@pytest.mark.django_db(transaction=True)
async def test_api_keys_never_appear_in_responses_events_pages_or_logs(caplog) -> None:
    """A full chat (auto compaction, a tool call, streaming), a manual compaction, a failing
    one whose upstream error body echoes the key, and every page and endpoint showing
    the channels: neither key appears anywhere, log records at DEBUG included."""
    import json as _json
    import logging

    from django.test import AsyncClient

    from scripted_llm import Fail, Reply, ScriptedLLMServer, ToolCall

    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpx2", "httpcore", "openai", "anthropic", "daphne", "django"):
        caplog.set_level(logging.DEBUG, logger=name)
    keys = (MAIN_KEY, AUX_KEY)
    seen: list[str] = []

    def summary_or_chat(body: dict[str, Any], wire: str) -> Any:
        if not body.get("tools"):  # a summary request (a chat turn has tools)
            return Reply(text=SEED_SUMMARY)
        last = body["messages"][-1]
        if last.get("role") == "tool" or isinstance(last.get("content"), list):
            return Reply(text="读完了。", chunk_size=3)
        return Reply(tool_calls=[ToolCall("call_k1", "list_files", "{}")])

    with ScriptedLLMServer(responder=summary_or_chat) as server:

        @database_sync_to_async
        def setup() -> dict[str, Any]:
            user = make_user("keyholder")
            staff = make_user("keystaff", is_staff=True, is_superuser=True)
            main = make_channel(
                name="main", base_url=server.openai_base_url, api_key=MAIN_KEY, context_window=6000
            )
            aux_provider = "anthropic"
            aux = make_channel(
                name="aux",
                provider=aux_provider,
                base_url=server.anthropic_base_url,
                api_key=AUX_KEY,
                is_auxiliary=True,
            )
            agent = make_agent(model_channel=main, auxiliary_model_channel=aux, owner=user)
            session = make_session(owner=user, agent=agent)
            fill_history(session, messages=40, filler=200)
            return {
                "user": user,
                "staff": staff,
                "sid": str(session.pk),
                "agent": agent.pk,
                "channels": (main.pk, aux.pk),
                "token": Token.objects.create(user=user).key,
                "staff_token": Token.objects.create(user=staff).key,
            }

        @database_sync_to_async
        def more_turns(sid: str) -> None:
            fill_history(ChatSession.objects.get(pk=sid), messages=20, filler=200)

        w = await setup()
        sid = w["sid"]
        ws, _ = await connect(token=w["token"], origin=None)
        html, _ = await connect(path=f"/ws/chat/html/?session={sid}", token=w["token"])
        await send(ws, {"type": "chat", "sessionId": sid, "content": "列出文件"})
        events = await receive_until(ws, "turn_done", timeout=30)
        kinds = [e["type"] for e in events]
        assert "compaction_done" in kinds and "delta" in kinds, kinds
        assert any(e["type"] == "message" and e["message"]["role"] == "tool" for e in events)
        await more_turns(sid)  # something new to compact (else: no gain, a notice)
        await send(ws, {"type": "compact", "sessionId": sid})
        events += await receive_until(ws, "token_update", timeout=30)
        await more_turns(sid)
        # the auxiliary provider now fails with a body that quotes the key back
        server.responder = lambda body, wire: (
            Fail(status=401, body={"error": {"message": f"Incorrect API key provided: {AUX_KEY}"}})
            if not body.get("tools")
            else Reply(text="ok")
        )
        await send(ws, {"type": "compact", "sessionId": sid})
        failed = await receive_until(ws, "compaction_failed", timeout=30)
        assert failed[-1]["reason"] == "auth_error", failed[-1]
        events += failed + await receive_until(ws, "token_update", timeout=30)
        seen += [_json.dumps(e, ensure_ascii=False) for e in events]
        while not await html.receive_nothing(timeout=0.2):
            seen.append(await html.receive_from())
        await ws.disconnect()
        await html.disconnect()

        rest = AsyncClient()
        response = await rest.post(
            f"/api/sessions/{sid}/compact/",
            {},
            content_type="application/json",
            headers={"Authorization": f"Token {w['token']}"},
        )
        assert response.status_code == 502 and response.json()["reason"] == "auth_error"
        seen.append(response.content.decode() + str(response.headers))

    @database_sync_to_async
    def pages() -> list[str]:
        user_client, staff_client = Client(), Client()
        user_client.force_login(w["user"])
        staff_client.force_login(w["staff"])
        api = APIClient(HTTP_AUTHORIZATION=f"Token {w['staff_token']}")
        owner = APIClient(HTTP_AUTHORIZATION=f"Token {w['token']}")
        main_id, aux_id = w["channels"]
        bodies = []
        for client, url in [
            (user_client, f"/chat/{sid}/"),
            (user_client, f"/chat/{sid}/?view=full"),
            (user_client, f"/agents/{w['agent']}/"),
            (user_client, "/agents/"),
            (staff_client, "/channels/"),
            (staff_client, f"/channels/{main_id}/"),
            (staff_client, f"/channels/{aux_id}/"),
            (staff_client, f"/admin/agents/modelchannel/{main_id}/change/"),
            (staff_client, "/admin/agents/modelchannel/"),
            (staff_client, f"/admin/agents/message/?session__id__exact={sid}"),
        ]:
            response = client.get(url)
            assert response.status_code == 200, url
            bodies.append(response.content.decode())
        for url in (
            "/api/model-channels/",
            f"/api/model-channels/{main_id}/",
            "/api/agents/",
            f"/api/sessions/{sid}/messages/?view=full",
            "/api/dict-info/",
            "/api/schema/",
        ):
            response = (owner if "/sessions/" in url else api).get(url)
            assert response.status_code == 200, url
            bodies.append(response.content.decode())
        response = api.patch(f"/api/model-channels/{main_id}/", {"name": "main 2"}, format="json")
        bodies.append(response.content.decode())
        return bodies

    seen += await pages()
    seen += [
        r.getMessage() + (r.exc_text or "") + str(r.__dict__.get("args")) for r in caplog.records
    ]
    assert len(caplog.records) > 10, "logs were captured"
    for text in seen:
        for key in keys:
            assert key not in text, (key, text[:400])
