"""Code blocks in answers (issue 16 item 6): highlighted on the server by Pygments, with the
language and a copy button, and still inert — the sanitizer keeps only the classes
``web.code_blocks`` writes, and the page's CSP needs no inline style."""

from __future__ import annotations

from django.utils import translation

from tests.ui.html import parse
from web.code_blocks import HIGHLIGHT_MAX_CHARS, TOKEN_CLASSES
from web.templatetags.chat_markdown import render_markdown


def _block(markdown: str):
    doc = parse(render_markdown(markdown))
    (block,) = doc.has_class("codeblock")
    return block


def test_a_known_language_is_highlighted_and_labelled() -> None:
    block = _block("```python\ndef f(x):\n    return '<x>'\n```")
    assert block.has_class("codeblock-lang")[0].text() == "Python"
    code = block.select("pre")[0].select("code")[0]
    assert code.text() == "def f(x):\n    return '<x>'\n"  # the code, exactly
    keywords = [s.text() for s in code.select("span") if s.classes == {"k"}]
    assert keywords == ["def", "return"]
    assert {c for s in code.select("span") for c in s.classes} <= TOKEN_CLASSES
    assert all("style" not in n.attrs for n in block.iter())  # classes only: CSP-proof


def test_the_copy_button_speaks_the_pages_language() -> None:
    with translation.override("zh-hans"):
        button = _block("```js\nlet a = 1\n```").select("button")[0]
    assert (button.text(), button.get("type"), button.classes) == (
        "复制",
        "button",
        {"codeblock-copy"},
    )
    with translation.override("en"):
        assert _block("```\nx\n```").select("button")[0].text() == "Copy"


def test_unknown_languages_and_plain_blocks_are_escaped_text() -> None:
    for markdown, label in [
        ('```evil" onclick="alert(1)\n<script>x</script>\n```', 'evil"'),
        ("```\n<b>plain</b>\n```", ""),
        ("    <i>indented</i>\n", ""),
    ]:
        block = _block(markdown)
        assert block.has_class("codeblock-lang")[0].text() == label
        code = block.select("code")[0]
        assert not code.elements  # no markup inside: escaped text
        assert all(not name.startswith("on") for n in block.iter() for name in n.attrs)


def test_a_huge_block_is_shown_plain() -> None:
    code = "x = 1\n" * (HIGHLIGHT_MAX_CHARS // 6 + 1)
    block = _block(f"```python\n{code}```")
    assert block.select("code")[0].elements == [] and block.select("code")[0].text() == code


def test_only_the_highlighters_classes_survive() -> None:
    """Raw HTML is text anyway; a class smuggled into what markdown-it renders (a fence's
    info string) is not a class on any element."""
    html = render_markdown('```nosuch codeblock">\ny\n```\n\n<span class="k">x</span>')
    doc = parse(html)
    classes = {c for n in doc.iter() for c in n.classes}
    assert classes <= {"codeblock", "codeblock-head", "codeblock-lang", "codeblock-copy"}
    assert "&lt;span class=" in html
