"""What makes a piece of HTML active (scripts, event handlers, script URLs, embeds)."""

from __future__ import annotations

from html.parser import HTMLParser


class HtmlAudit(HTMLParser):
    """Collects what makes HTML active: scripts, event handlers, script URLs, embeds."""

    URL_ATTRS = frozenset({"href", "src", "action", "formaction", "xlink:href", "data", "srcdoc"})
    ACTIVE_TAGS = frozenset({"iframe", "object", "embed", "svg", "math", "base", "frame", "form"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[str | None, str]] = []  # (src, inline text)
        self.handlers: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.script_urls: list[tuple[str, str, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._in_script: list[str] | None = None
        self._script_src: str | None = None

    @classmethod
    def of(cls, html: str) -> HtmlAudit:
        audit = cls()
        audit.feed(html)
        audit.close()
        return audit

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.tags.append((tag, values))
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((tag, name, value or ""))
            squashed = "".join((value or "").split()).lower()
            if name in self.URL_ATTRS and squashed.startswith(("javascript:", "vbscript:")):
                self.script_urls.append((tag, name, value or ""))
            if name in self.URL_ATTRS and squashed.startswith("data:text/html"):
                self.script_urls.append((tag, name, value or ""))
        if tag == "script":
            self._in_script, self._script_src = [], values.get("src")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "script":
            self.handle_endtag(tag)

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self._in_script.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._script_src, "".join(self._in_script)))
            self._in_script, self._script_src = None, None

    def tag_names(self) -> set[str]:
        return {tag for tag, _ in self.tags}
