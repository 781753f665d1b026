"""Code blocks of a chat answer: highlighted on the server with Pygments, with a language
label and a copy button, and nothing the page must fetch from elsewhere.

Pygments writes class names only (``<span class="k">``); their colours are in ``app.css``,
so the Content-Security-Policy needs no inline style. ``ALLOWED_CLASSES`` is the exact set
of class names this module writes: the Markdown sanitizer (``chat_markdown``) keeps those
and drops every other class, so a model's answer cannot borrow the page's own classes.
"""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.translation import gettext as _
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

# A longer block is shown plain: highlighting is linear, but a megabyte of log pasted into
# a fence would cost the page and the socket more than it gives.
HIGHLIGHT_MAX_CHARS = 60_000
_LANG_NAME = re.compile(r"^[A-Za-z0-9_+#.-]{1,40}$")

TOKEN_CLASSES = frozenset(name for name in STANDARD_TYPES.values() if name)
ALLOWED_CLASSES: dict[str, set[str]] = {
    "div": {"codeblock", "codeblock-head"},
    "span": {"codeblock-lang", *TOKEN_CLASSES},
    "button": {"codeblock-copy"},
}
ALLOWED_TAGS = frozenset({"div", "button"})
ALLOWED_ATTRIBUTES = {"button": {"type"}}

_FORMATTER = HtmlFormatter(nowrap=True)


def _lexer(language: str) -> Lexer | None:
    if not _LANG_NAME.match(language):
        return None
    try:
        return get_lexer_by_name(language.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def code_block_html(code: str, info: str = "") -> str:
    """One fenced (``info`` = the fence's language) or indented block as HTML: a head with
    the language and a Copy button (``copy.js`` makes it copy), then the code, highlighted
    when the language is one Pygments knows. Everything from the text is escaped."""
    language = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    lexer = _lexer(language) if language and len(code) <= HIGHLIGHT_MAX_CHARS else None
    body = highlight(code, lexer, _FORMATTER) if lexer is not None else escape(code)
    label = lexer.name if lexer is not None else language
    return (
        '<div class="codeblock"><div class="codeblock-head">'
        f'<span class="codeblock-lang">{escape(label)}</span>'
        f'<button type="button" class="codeblock-copy">{escape(_("Copy"))}</button>'
        f"</div><pre><code>{body}</code></pre></div>\n"
    )
