"""The chat page's own behaviour in Chromium: the seed §8.1 token bar (computed colours,
pulse, threshold tick, hover breakdown), streaming, collapsible tool calls, and the
failure bubble in English."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Locator, Page, expect

from agents.models import ChatSession
from agents.services import message_append, session_record_usage
from condense.types import ToolCall
from scripted_llm import Reply
from tests.e2e.support import conversation
from tests.support.chat_page import open_chat

# the seed's green / orange / red (#67c23a, #e6a23c, #f56c6c) in the dark theme; in the light
# one, shades that keep 3:1 against the bar's track (WCAG AA, issue 26 item 6)
GREEN, ORANGE, RED = "rgb(61, 139, 29)", "rgb(184, 110, 0)", "rgb(217, 54, 54)"
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _style(locator: Locator, *properties: str, pseudo: str | None = None) -> list[str]:
    return locator.evaluate(
        "(e, [props, pseudo]) => props.map(p => getComputedStyle(e, pseudo)[p])",
        [list(properties), pseudo],
    )


def _use(session: ChatSession, tokens: int) -> None:
    """The provider reported ``tokens`` of input for the context as it is now."""
    reply = message_append(session=session, role="assistant", content="好的。")
    session_record_usage(
        session=session, input_tokens=tokens, output_tokens=1, input_position=reply.position
    )


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("输入消息")
    box.fill(text)
    box.press("Enter")


def test_token_bar_colours_tick_and_breakdown(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    """Seed §8.1 with an agent whose threshold is 85%, not the default 70%: green below
    it, orange from it to 90%, red with a pulse above; the tick sits at 85% and says so on
    hover and keyboard focus, also after a live token update; the status line's hover
    shows the input / output / tool breakdown."""
    user = data.user("meter")
    channel = data.channel(context_window=4000)
    agent = data.agent(model_channel=channel, compaction_threshold_percent=85)
    session = data.session(owner=user, agent=agent, title="meter", rows=conversation(1, chars=40))
    data.login(page.context, user, daphne_url)
    bar = page.get_by_role("progressbar")
    fill = page.locator("#token-bar .token-fill")
    for used, state, colour in [
        (3399, "ok", GREEN),  # 84.98%: below this agent's threshold, though above 70%
        (3400, "warn", ORANGE),  # exactly the threshold
        (3600, "warn", ORANGE),  # exactly 90%
        (3601, "danger", RED),
    ]:
        _use(session, used)
        open_chat(page, session)
        expect(bar).to_have_attribute("aria-valuenow", str(used))
        expect(bar).to_have_attribute("aria-valuemax", "4000")
        expect(bar).to_have_attribute("data-state", state)
        background, animation, iterations = _style(
            fill, "backgroundColor", "animationName", "animationIterationCount"
        )
        assert background == colour, (used, background)
        if state == "danger":
            assert (animation, iterations) == ("pulse", "infinite")
        else:
            assert animation == "none"
    readme_shot(page, "token-bar-danger")

    # 3 px, the whole width of the composer, above the input
    box = bar.bounding_box()
    composer = page.locator(".composer").bounding_box()
    assert box["height"] == 3 and box["width"] == composer["width"]
    assert box["y"] < page.get_by_label("输入消息").bounding_box()["y"]

    tick = page.locator("#token-bar .token-threshold")
    tip = tick.locator(".tip")
    assert _style(tick, "width", "backgroundColor", pseudo="::before")[0] == "1px"
    tick_box = tick.bounding_box()
    assert abs(tick_box["x"] + tick_box["width"] / 2 - (box["x"] + 0.85 * box["width"])) <= 1.5
    expect(tip).to_be_hidden()
    tick.hover()
    expect(tip).to_be_visible()
    expect(tip).to_have_text("自动压缩阈值 85%")
    readme_shot(page, "threshold-tick-hover", docs="token-bar-threshold")

    breakdown = page.locator("#meter-status .breakdown")
    expect(breakdown).to_be_hidden()
    page.locator("#meter-status .status-numbers").hover()
    expect(breakdown).to_be_visible()
    expect(breakdown).to_contain_text(re.compile(r"输入 [\d,]+ · 输出 [\d,]+ · 工具 [\d,]+ tokens"))
    readme_shot(page, "meter-breakdown-hover")
    expect(page.locator("#meter-status .status-numbers")).to_have_text(
        re.compile(r"3,601/4,000 tokens · 阈值 85% · 已压缩 0 次")
    )

    # a live turn re-renders the bar from the socket: still the agent's threshold
    llm.queue_main(Reply(text="收到。", input_tokens=1000))
    _send(page, "继续")
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    expect(bar).to_have_attribute("data-state", "ok")
    assert _style(fill, "backgroundColor") == [GREEN]
    page.mouse.move(0, 0)
    page.locator("#token-bar .token-threshold").focus()  # tabindex=0: keyboard users too
    expect(page.locator("#token-bar .token-threshold .tip")).to_be_visible()
    expect(page.locator("#token-bar .token-threshold .tip")).to_have_text("自动压缩阈值 85%")


def test_compacting_bar_is_a_blue_animated_gradient(page: Page, data, daphne_url, llm) -> None:
    user = data.user("blue")
    agent = data.agent(
        model_channel=data.channel(context_window=4000),
        auxiliary_model_channel=data.aux_channel(),
    )
    session = data.session(owner=user, agent=agent, rows=conversation(8, chars=300))
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    llm.aux_delay = 1.5
    _send(page, "/compact")
    expect(page.locator("#compaction-flag")).to_have_attribute("data-compacting", "true")
    fill = page.locator("#token-bar .token-fill")
    image, animation = _style(fill, "backgroundImage", "animationName")
    assert image.startswith("linear-gradient") and "rgb(64, 158, 255)" in image
    assert animation == "flow"
    expect(page.locator("#meter-status .status-compacting")).to_have_text("正在压缩上下文...")
    expect(page.locator('#messages [data-event="compaction_done"]')).to_have_count(1)
    assert _style(fill, "animationName") == ["none"]


def test_the_answer_streams_before_it_is_stored(page: Page, data, daphne_url, llm) -> None:
    user = data.user("stream")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    answer = "第一句先到。第二句随后。第三句最后才到，整段回答是一点一点流出来的。"
    llm.queue_main(Reply(text=answer, chunk_size=4, delay_per_chunk=0.25))
    _send(page, "讲慢一点")
    stream = page.locator("#stream-text")
    expect(stream).to_contain_text("第一句")
    partial = stream.inner_text()
    assert 0 < len(partial) < len(answer)  # part of the answer, before the rest
    expect(page.locator("#messages article[data-role=assistant]")).to_have_count(0)
    expect(page.locator("#messages article[data-role=assistant] .bubble")).to_have_text(answer)
    expect(stream).to_be_empty()


def test_tool_calls_and_results_are_collapsible(page: Page, data, daphne_url, llm) -> None:
    """A live tool round trip: the call and its result arrive folded and open on click."""
    user = data.user("tools")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    llm.queue_main(
        Reply(
            tool_calls=[
                ToolCall("call-1", "write_file", '{"path": "notes.md", "content": "# 计划"}')
            ]
        ),
        Reply(text="已写入 notes.md。"),
    )
    _send(page, "把计划写进 notes.md")
    expect(page.locator("#messages article[data-role=assistant]").last).to_contain_text(
        "已写入 notes.md"
    )
    call = page.locator("#messages details.tool-call")
    result = page.locator("#messages article[data-role=tool] details.tool-block")
    for block, title, body in [
        (call, "工具调用 · write_file", '"path": "notes.md"'),
        (result, "工具结果 · write_file", "notes.md"),
    ]:
        expect(block).to_have_count(1)
        expect(block.locator("summary")).to_contain_text(title)
        expect(block.locator("pre")).to_be_hidden()
        block.locator("summary").click()
        expect(block.locator("pre")).to_be_visible()
        expect(block.locator("pre")).to_contain_text(body)
        block.locator("summary").click()
        expect(block.locator("pre")).to_be_hidden()


def test_failure_bubble_in_english_starts_a_new_chat(page: Page, data, daphne_url) -> None:
    """No auxiliary model: the live failure bubble speaks English only (the stored error
    is "未配置辅助模型 (no auxiliary model configured)"), and "start a new chat" opens a
    new chat with the same agent, still in English."""
    user = data.user("english")
    agent = data.agent(name="Helper", model_channel=data.channel())
    session = data.session(owner=user, agent=agent, rows=conversation(8, chars=300))
    data.login(page.context, user, daphne_url)
    page.context.add_cookies([{"name": "django_language", "value": "en", "url": daphne_url}])
    page.goto(f"/chat/{session.pk}/")
    expect(page.locator("#ws-status")).to_have_text("Connected")
    page.get_by_role("button", name="/compact").click()
    bubble = page.locator('#messages [data-event="compaction_failed"]')
    expect(bubble).to_contain_text(
        "Compaction failed: No auxiliary model is configured — you can continue the "
        "conversation or start a new chat"
    )
    expect(bubble).to_contain_text("Choose an auxiliary model on the agent's page")
    assert not CJK.search(bubble.inner_text())
    bubble.get_by_role("link", name="start a new chat").click()
    # a new chat with the same agent, stored with its first message (issue 16)
    expect(page).to_have_url(re.compile(rf"/chat/new/\?from_session={session.pk}$"))
    assert ChatSession.objects.filter(owner=user).count() == 1
    expect(page.get_by_label("Message", exact=True)).to_be_visible()
    expect(page.locator("#new-chat-agent")).to_have_value(str(agent.pk))


@pytest.mark.parametrize("width", [1280, 390])
def test_a_token_cap_sets_the_bars_marker_and_colour(page: Page, data, daphne_url, width) -> None:
    """Issue 26 item 8: with a 1,500-token cap compaction fired at 1,733 while the bar sat
    green below its percentage marker. The marker stands at the cap; past it the bar is
    orange."""
    page.set_viewport_size({"width": width, "height": 844})
    user = data.user(f"cap-{width}")
    channel = data.channel(context_window=8000)
    agent = data.agent(model_channel=channel, compaction_token_cap=1500)
    session = data.session(owner=user, agent=agent, title="cap", rows=conversation(1, chars=40))
    data.login(page.context, user, daphne_url)
    _use(session, 1733)
    open_chat(page, session)
    bar = page.get_by_role("progressbar")
    expect(bar).to_have_attribute("data-state", "warn")
    assert _style(page.locator("#token-bar .token-fill"), "backgroundColor")[0] == ORANGE
    box = bar.bounding_box()
    tick = page.locator("#token-bar .token-threshold").bounding_box()
    at = box["x"] + box["width"] * 1500 / 8000  # 18.75%, not the threshold's 70%
    assert abs(tick["x"] + tick["width"] / 2 - at) <= 1.5
