"""DRF's browsable API pages run under the Content-Security-Policy (issue 27 item 14): the
highlighting style DRF writes inline carries the response's nonce, so the browser applies it
and reports no violation (``browser_problems`` fails the test on one)."""

from __future__ import annotations

from playwright.sync_api import Page


def test_the_browsable_api_is_styled_under_the_policy(
    page: Page, data, daphne_url, browser_problems
) -> None:
    user = data.user("drf-pages")
    data.session(owner=user, agent=data.agent())
    data.login(page.context, user, daphne_url)
    response = page.goto("/api/sessions/")
    assert response is not None and response.status == 200
    assert "text/html" in response.headers["content-type"]
    styles = page.evaluate(
        """() => [...document.querySelectorAll('style')].map(
               s => ({nonce: Boolean(s.nonce), rules: s.sheet ? s.sheet.cssRules.length : 0}))"""
    )
    assert styles and all(s["nonce"] and s["rules"] > 0 for s in styles), styles
    page.wait_for_timeout(200)  # a refused style is reported on the console
