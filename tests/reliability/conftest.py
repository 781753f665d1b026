"""Shared builders and checks of the reliability tests (fault matrix, storage, fuzzing, security).

The socket helpers are the gateway tests' own (the real ASGI stack in-process:
auth, origin check, routing, consumer, gateway, channel layer).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from asgiref.sync import async_to_sync

# Importing the ASGI app runs django.setup() again, which re-applies LOGGING and drops
# every handler pytest's caplog attached; do it once at collection, never inside a test.
import netaclaw.asgi  # noqa: F401
from agents.models import ChatSession, Message, Role
from agents.services import messages_bulk_append
from tests.gateway.conftest import connect, receive, receive_until, send, token_for

__all__ = [
    "SUMMARY",
    "HtmlAudit",
    "connect",
    "fill_history",
    "history_rows",
    "receive",
    "receive_until",
    "send",
    "server_frames_ok",
    "token_for",
]

# A summary long enough to pass the seed's 200-character floor, in the seed's structure.
SUMMARY = (
    "## 目标\n继续修复 parser.py 中的 bug。\n## 进度\n- 已定位 tokenizer 的越界读取\n"
    "## 相关文件\n- src/parser.py\n## 下一步\n补一个回归测试。\n" + "细节说明。" * 60
)

KNOWN_EVENT_TYPES = {
    "compaction_start",
    "compaction_done",
    "compaction_failed",
    "compaction_skipped",
    "token_update",
    "message",
    "delta",
    "turn_done",
    "error",
}


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """A new channel-layer instance per test.

    Each async test runs on its own event loop, but ``get_channel_layer()`` caches one
    instance per process. channels-redis keeps asyncio locks in it; a consumer that was
    receiving when a test's loop closed leaves its lock held and bound to that dead
    loop, and the next test's consumers then fail with "Lock … is bound to a different
    event loop" (or hang). Production runs one loop per process, so this is test-only.
    """
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    layer = channel_layers.backends.get("default")
    if layer is not None and hasattr(layer, "flush"):  # Redis: drop this test's groups too
        async_to_sync(layer.flush)()
    channel_layers.backends.clear()


def fill_history(session: ChatSession, *, messages: int, filler: int) -> list[Message]:
    """``messages`` alternating user/assistant turns of about ``filler`` * 2 characters."""
    rows = []
    for i in range(messages):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        rows.append({"role": role, "content": f"第 {i} 轮：修改 src/parser.py " + "内容" * filler})
    return messages_bulk_append(session=session, rows=rows)


def history_rows(session: ChatSession) -> list[tuple[Any, ...]]:
    """Every stored field of every non-event message of ``session``, by id.

    Compaction must leave these byte-identical when it fails; system event records
    (the failure bubble) are allowed to be added, so they are left out.
    """
    fields = [f.attname for f in Message._meta.concrete_fields]
    rows = (
        Message.objects.filter(session=session)
        .exclude(role=Role.SYSTEM, metadata__has_key="systemType")
        .order_by("id")
        .values_list(*fields)
    )
    return [tuple(json.dumps(v, sort_keys=True, default=str) for v in row) for row in rows]


def server_frames_ok(frames: list[str], *, forbidden: tuple[str, ...] = ()) -> list[dict]:
    """Every server frame is sendable by a real server and well-formed; returns them parsed.

    A real Daphne encodes each text frame as UTF-8 (a lone surrogate kills the socket
    with 1011), so each must encode; each is one JSON object of a known type, and
    none contains any of ``forbidden`` (another user's content, API keys).
    """
    parsed = []
    for frame in frames:
        frame.encode("utf-8")  # raises UnicodeEncodeError for what Daphne cannot send
        data = json.loads(frame)
        assert isinstance(data, dict) and data.get("type") in KNOWN_EVENT_TYPES, frame[:300]
        for secret in forbidden:
            assert secret not in frame, f"{secret!r} leaked in {frame[:300]}"
        parsed.append(data)
    return parsed


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
