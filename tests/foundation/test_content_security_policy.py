"""The Content-Security-Policy (django-csp) in every mode, and pages that need nothing it
forbids: scripts from the server with the response's nonce, htmx's indicator style allowed
by the same nonce (``inlineStyleNonce``), no inline script or event handler anywhere
(issue 15, item 6). The browser tests run under it too (tests/e2e fail on any console error,
a CSP violation included)."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from tests.factories import make_agent, make_session, make_user

pytestmark = pytest.mark.django_db

SCRIPT = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)
HANDLER = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)


def _policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return dict(d.strip().split(" ", 1) for d in header.split(";") if d.strip())


def _pages(client):
    user = make_user("csp", is_staff=True, is_superuser=True)
    session = make_session(owner=user, agent=make_agent())
    client.force_login(user)
    return [
        reverse("chat:index"),
        reverse("chat:session", args=[session.pk]),
        reverse("config:agent_list"),
        reverse("config:channel_list"),
        reverse("config:channel_new"),
        reverse("admin:index"),
    ]


def test_every_page_carries_a_policy_its_scripts_satisfy(client) -> None:
    for url in _pages(client):
        response = client.get(url)
        assert response.status_code == 200, url
        policy = _policy(response)
        assert policy["default-src"] == "'self'" and policy["object-src"] == "'none'", url
        assert "'unsafe-inline'" not in policy["script-src"], url
        assert "'unsafe-eval'" not in response["Content-Security-Policy"], url
        html = response.content.decode()
        nonce = re.search(r"'nonce-([^']+)'", policy["script-src"])
        for attributes in SCRIPT.findall(html):
            if "src=" in attributes:
                continue  # from this server: 'self'
            assert 'type="application/json"' in attributes, (url, attributes)  # data
        assert not HANDLER.search(html), url
        if "htmx" in html and "/admin/" not in url:
            assert nonce, url
            assert f'nonce="{nonce.group(1)}"' in html, url
            config = re.search(r"<meta name=\"htmx-config\" content='([^']+)'>", html)
            assert config and json.loads(config.group(1)) == {"inlineStyleNonce": nonce.group(1)}


def test_the_login_page_and_the_policy_without_a_nonce(client) -> None:
    response = client.get(reverse("login"))
    policy = _policy(response)
    assert policy["frame-ancestors"] == "'none'" and policy["form-action"] == "'self'"
    assert policy["connect-src"] == "'self'"  # the chat socket: this origin only
