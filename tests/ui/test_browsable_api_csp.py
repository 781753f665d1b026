"""DRF's browsable API pages carry the response's CSP nonce on the style DRF writes inline
(issue 27 item 14; in Chromium: tests/e2e/test_browsable_api.py)."""

from __future__ import annotations

import re

import pytest

from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_inline_style_of_a_browsable_page_carries_the_nonce(client) -> None:
    client.force_login(make_user("drf"))
    response = client.get("/api/sessions/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    nonce = re.search(r"style-src [^;]*'nonce-([^']+)'", response["Content-Security-Policy"])
    assert nonce is not None
    styles = re.findall(r"<style([^>]*)>", response.content.decode())
    assert styles == [f' nonce="{nonce.group(1)}"']
