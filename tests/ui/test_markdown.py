"""The ``markdown`` filter: useful Markdown, inert HTML."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from tests.ui.html import parse
from web.templatetags.chat_markdown import render_markdown

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<svg onload=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    '<a href="javascript:alert(1)">x</a>',
    "<iframe src=https://evil.example></iframe>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "![x](javascript:alert(1))",
    '<details open ontoggle="alert(1)">x</details>',
]


def _inert(html: str) -> None:
    doc = parse(html)
    for node in doc.iter():
        assert node.tag not in {"script", "iframe", "svg", "img", "style", "object"}, html
        for name, value in node.attrs.items():
            assert not name.startswith("on"), html
            assert name != "style", html
            assert not (value or "").strip().lower().startswith(("javascript:", "data:")), html


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_input_is_inert(text: str) -> None:
    _inert(render_markdown(text))
    _inert(render_markdown(f"# title\n\n{text}\n\n- item {text}"))


def test_markdown_features_survive() -> None:
    html = render_markdown(
        "# Goal\n\n**bold** *it* `code`\n\n- a\n- b\n\n```python\nprint('<x>')\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~ > q"
    )
    for fragment in [
        "<h1>Goal</h1>",
        "<strong>bold</strong>",
        "<em>it</em>",
        "<code>code</code>",
        "<li>a</li>",
        "'&lt;x&gt;'",
        "<table>",
        "<s>old</s>",
    ]:
        assert fragment in html, fragment


def test_links_get_noopener_nofollow() -> None:
    doc = parse(render_markdown("[site](https://example.com) <https://x.org> [m](mailto:a@b.c)"))
    links = doc.select("a")
    assert [a.get("href") for a in links] == [
        "https://example.com",
        "https://x.org",
        "mailto:a@b.c",
    ]
    assert all(a.get("rel") == "noopener nofollow" for a in links)


def test_raw_html_is_shown_as_text() -> None:
    html = render_markdown("<b>not bold</b>")
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html and "<b>" not in html


def test_template_filter() -> None:
    out = Template("{% load chat_markdown %}{{ text|markdown }}").render(
        Context({"text": "**x** <script>y</script>"})
    )
    assert "<strong>x</strong>" in out and "<script>" not in out
    assert Template("{% load chat_markdown %}{{ none|markdown }}").render(Context({})) == ""
