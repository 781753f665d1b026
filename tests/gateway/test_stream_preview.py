"""The streamed answer's re-rendering schedule (``channels_app.stream_preview``): at most
every ``interval``, slower while renders are slow, never losing the last words, and plain
text past ``max_chars``."""

from __future__ import annotations

from channels_app.stream_preview import StreamPreview


def test_the_first_delta_renders_at_once_then_at_most_every_interval() -> None:
    preview = StreamPreview(interval=0.1)
    assert preview.add("a", now=0.0) == "render"
    preview.rendered(0.0, 0.001)
    assert preview.add("b", now=0.02) == "later"
    assert abs(preview.due_in(0.02) - 0.081) < 1e-9
    assert preview.add("c", now=0.05) == "wait"  # one render is planned: nothing more
    preview.rendered(0.101, 0.102)
    assert preview.text == "abc"
    assert preview.add("d", now=0.21) == "render"


def test_slow_renders_space_the_next_ones_out() -> None:
    preview = StreamPreview(interval=0.1, slowdown=8)
    preview.add("x", now=0.0)
    preview.rendered(0.0, 0.05)  # 50 ms: the next render waits 400 ms
    assert preview.add("y", now=0.3) == "later"
    assert abs(preview.due_in(0.3) - 0.15) < 1e-9


def test_past_max_chars_the_answer_is_plain_and_appended() -> None:
    preview = StreamPreview(max_chars=10)
    assert preview.add("12345", now=0.0) == "render"
    preview.rendered(0.0, 0.0)
    assert preview.add("678901", now=1.0) == "plain"
    assert preview.add("more", now=2.0) == "append"
    assert preview.text == "12345678901more"


def test_reset_forgets_the_answer_and_outdates_planned_renders() -> None:
    preview = StreamPreview()
    preview.add("old", now=0.0)
    preview.rendered(0.0, 0.0)
    assert preview.add("er", now=0.01) == "later"
    planned = preview.generation
    preview.reset()
    assert preview.generation != planned and preview.text == ""
    assert preview.add("new", now=0.02) == "render"
