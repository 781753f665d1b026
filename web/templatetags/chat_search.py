"""``{{ text|highlight:query }}``: search snippets with the query's words marked — the
text escaped first, so nothing in a message becomes markup."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from recall.search import query_terms

register = template.Library()


@register.filter
def highlight(text: str, query: str) -> SafeString:
    escaped = str(escape(text))
    terms = sorted({str(escape(t)) for t in query_terms(query or "")}, key=len, reverse=True)
    if not terms:
        return mark_safe(escaped)
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    return mark_safe(pattern.sub(lambda m: f"<mark>{m.group(0)}</mark>", escaped))
