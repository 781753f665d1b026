"""The ``markdown`` filter: CommonMark with raw HTML off, then nh3 on top.

markdown-it-py with ``html=False`` escapes any HTML in the text and refuses
``javascript:`` / ``data:`` links; nh3 then enforces an allow-list of tags and
attributes (no scripts, no ``on*`` handlers, http(s)/mailto links only), so a
model's answer or a pasted document can never run code in the page. Code blocks
are highlighted on the server (``web.code_blocks``): the sanitizer keeps exactly
the classes that module writes and no other class.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.token import Token

from web import code_blocks

register = template.Library()

ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "del", "details", "em", "h1", "h2",
        "h3", "h4", "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "span",
        "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
    }
) | code_blocks.ALLOWED_TAGS  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "td": {"align"},
    "th": {"align"},
    "ol": {"start"},
    **code_blocks.ALLOWED_ATTRIBUTES,
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener nofollow"


def _fence(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    return code_blocks.code_block_html(token.content, unescapeAll(token.info or ""))


def _code_block(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return code_blocks.code_block_html(tokens[idx].content)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
        ["table", "strikethrough"]
    )
    parser.add_render_rule("fence", _fence)
    parser.add_render_rule("code_block", _code_block)
    return parser


def render_markdown(text: str) -> SafeString:
    """Markdown → sanitized HTML, safe to insert into a page."""
    html = _parser().render(text or "")
    cleaned = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
        allowed_classes=code_blocks.ALLOWED_CLASSES,
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        strip_comments=True,
    )
    return mark_safe(cleaned)


@register.filter(name="markdown", is_safe=True)
def markdown_filter(value: object) -> SafeString:
    return render_markdown("" if value is None else str(value))
