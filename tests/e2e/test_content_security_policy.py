"""The chat page works under its Content-Security-Policy (issue 15, item 6), and the policy is
enforced: every browser test fails on a console error, so a violation anywhere in the suite
fails it (``browser_problems``); here, one on purpose shows that it would."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from scripted_llm import Reply
from tests.support.chat_page import open_chat


def test_the_chat_page_runs_under_its_policy(page: Page, data, daphne_url, llm, browser_problems):
    user = data.user("csp")
    agent = data.agent(model_channel=data.channel())
    session = data.session(owner=user, agent=agent)
    data.login(page.context, user, daphne_url)

    response = page.goto(f"/chat/{session.pk}/")
    assert response is not None
    policy = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert re.search(r"'nonce-[^']+'", directives["script-src"])
    assert "'unsafe-inline'" not in directives["script-src"] + directives["style-src"]
    open_chat(page, session)  # htmx and its socket extension ran: the socket is open
    # htmx's indicator style went in with the response's nonce (inlineStyleNonce)
    assert page.evaluate("() => document.querySelectorAll('head style').length") >= 1
    assert page.evaluate("() => [...document.querySelectorAll('head style')].every(s => s.nonce)")

    llm.queue_main(Reply(text="在 CSP 之下照常回答。", chunk_size=4))
    box = page.get_by_label("输入消息")
    box.fill("你好")
    box.press("Enter")
    expect(page.locator("#messages article[data-role=assistant]").last).to_contain_text(
        "在 CSP 之下照常回答。"
    )
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")

    # enforced: an inline script without the nonce does not run, and the browser says so
    page.evaluate(
        """() => { const s = document.createElement('script');
                   s.textContent = 'window.__injected = true'; document.body.append(s); }"""
    )
    assert page.evaluate("() => window.__injected === undefined")
    page.wait_for_timeout(200)
    refused = [p for p in browser_problems if "Content Security Policy" in p]
    assert refused, browser_problems
    for problem in refused:
        browser_problems.remove(problem)
