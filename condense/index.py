"""The mechanical index: what the summarized tool calls touched, listed without a model.

A summary is written by a model and may drop the one path or id that matters. The index
is extracted deterministically from the summarized tool calls (their arguments) and
results, and appended to the summary, so files, commands, URLs and identifiers survive
even a weak summary. Each entry names the messages it came from (``#id``), so a later
look-up can find the originals.

It is bounded: newest tool calls first, then paths and URLs seen in newest results,
then the entries of earlier summaries' indexes, until the budget is spent. The work is
bounded too: an argument string seen before is not parsed again, results are read
within the serializer's head/tail cut, and the scan stops once the index is full.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from condense.types import Message

KINDS = ("file", "command", "url", "id")
HEADER: dict[str, str] = {
    "zh": "## 已压缩工具调用索引（机械提取，非模型撰写）",
    "en": "## Index of the summarized tool calls (extracted mechanically, not written by a model)",
}
HEADERS = tuple(HEADER.values())
MAX_VALUE_CHARS = 160
MAX_IDS_SHOWN = 3
MAX_IDS_KEPT = 8

_URL = re.compile(r"https?://[^\s\"'<>()\[\]{}`\\]+")
_PATH = re.compile(r"(?<![\w/:.@-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+")
_FILE_EXT = re.compile(
    r"\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|json|md|rst|txt|ya?ml|toml|cfg|ini|conf|sh|bash|go|rs|"
    r"java|kt|c|h|cc|cpp|hpp|cs|rb|php|html?|css|scss|sql|vue|svelte|lock|xml|csv|log|ipynb|"
    r"env|lua|swift|m|mm|r|pl|proto|gradle|dockerfile|tf)$",
    re.IGNORECASE,
)
_BARE_FILE = re.compile(r"^[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,10}$")
_ENTRY = re.compile(r"^- (file|command|url|id) (.+?)(?: \((#\d+(?:, #\d+)*(?:, …)?)\))?$")
_WS = re.compile(r"\s+")

COMMAND_KEYS = frozenset({"command", "cmd", "commands", "script", "shell", "bash"})
PATH_KEYS = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "file_path",
        "filepath",
        "target_file",
        "relative_workspace_path",
        "dir",
        "directory",
        "target_directory",
        "cwd",
        "source",
        "destination",
    }
)
SHELL_TOOLS = frozenset(
    {"bash", "shell", "sh", "run", "exec", "execute", "terminal", "run_terminal_cmd"}
)
_SKIP_VALUES = frozenset({"", "true", "false", "none", "null"})


@dataclass(frozen=True, slots=True)
class IndexEntry:
    kind: str  # one of KINDS
    value: str
    ids: tuple[int, ...] = ()


def _clip(value: str) -> str:
    value = _WS.sub(" ", value).strip()
    return value if len(value) <= MAX_VALUE_CHARS else value[: MAX_VALUE_CHARS - 1] + "…"


def _is_path(text: str) -> bool:
    if len(text) > 300 or " " in text:
        return False
    if text.startswith(("/", "./", "../", "~/")) or text.count("/") >= 2:
        return True
    last = text.rsplit("/", 1)[-1]
    return bool(_FILE_EXT.search(last)) or ("/" in text and "." in last)


def is_file_name(word: str) -> bool:
    """A bare file name with a known extension (``app.py``, ``Cargo.toml``)."""
    return bool(_BARE_FILE.match(word) and _FILE_EXT.search(word))


def paths_and_urls(text: str) -> Iterable[tuple[str, str]]:
    """("url", …) and ("file", …) pairs of ``text``, in the order the rules find them."""
    if "/" not in text:
        return
    for url in _URL.findall(text) if "://" in text else ():
        yield "url", url.rstrip(".,;:")
    rest = _URL.sub(" ", text) if "://" in text else text
    for path in _PATH.findall(rest):
        path = path.rstrip(".,;:")
        if _is_path(path):
            yield "file", path


def _command_files(text: str) -> Iterable[tuple[str, str]]:
    """Paths and URLs in a command, bare file names (``app.py``) included."""
    yield from paths_and_urls(text)
    for token in text.split()[:200]:
        token = token.strip("'\"`;,()")
        if "/" not in token and is_file_name(token):
            yield "file", token


def _from_value(key: str, value: object) -> Iterable[tuple[str, str]]:
    key = key.lower()
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _from_value(str(k), v)
        return
    if isinstance(value, list):
        for v in value[:20]:
            yield from _from_value(key, v)
        return
    if isinstance(value, bool) or value is None:
        return
    text = str(value).strip()
    if text.lower() not in _SKIP_VALUES:
        yield from _from_text(key, text)


def _from_text(key: str, text: str) -> Iterable[tuple[str, str]]:
    """The entries of one argument's text, by what its key names, else by its shape."""
    if key in COMMAND_KEYS:
        yield "command", text.splitlines()[0] if text.splitlines() else text
        yield from _command_files(text)
    elif key in PATH_KEYS and (_is_path(text) or _BARE_FILE.match(text)):
        yield "file", text
    elif len(text) <= 80 and not any(c.isspace() for c in text):
        yield _short_value(key, text)
    else:
        yield from paths_and_urls(text)


def _short_value(key: str, text: str) -> tuple[str, str]:
    """A short word of an argument: a URL, a path, or an identifier (``key=value``)."""
    if text.startswith(("http://", "https://")):
        return "url", text
    if _is_path(text):
        return "file", text
    return "id", f"{key}={text}"


def call_entries(name: str, arguments: str) -> list[tuple[str, str]]:
    """(kind, value) pairs of one tool call, in the order they appear."""
    raw = (arguments or "").strip()
    found: list[tuple[str, str]] = []
    parsed: object = None
    if raw.startswith(("{", "[")):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
    if isinstance(parsed, dict):
        for key, value in parsed.items():
            found.extend(_from_value(str(key), value))
    elif isinstance(parsed, list):
        found.extend(_from_value("", parsed))
    elif raw:
        if name.lower() in SHELL_TOOLS:
            found.append(("command", raw.splitlines()[0]))
            found.extend(_command_files(raw))
        else:
            found.extend(paths_and_urls(raw))
    return [(kind, _clip(value)) for kind, value in found if value.strip()]


class IndexBuilder:
    """Collects entries in priority order until ``max_chars`` are spent (``full``).

    An entry keeps the first ``MAX_IDS_KEPT`` message ids it is added with (the newest,
    as the scan runs newest first), so a file read a thousand times costs no more.
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.used = 0
        self.entries: dict[tuple[str, str], list[int]] = {}
        self.full = max_chars <= 0

    def add(self, kind: str, value: str, ids: Iterable[int]) -> None:
        key = (kind, value)
        known = self.entries.get(key)
        if known is None:
            if self.full:
                return
            cost = len(kind) + len(value) + 14  # "- kind value (#123)\n"
            if self.used + cost > self.max_chars:
                self.full = True
                return
            self.used += cost
            known = self.entries[key] = []
        if len(known) >= MAX_IDS_KEPT:
            return
        for i in ids:
            if i not in known:
                known.append(i)

    def saturated(self, pairs: Sequence[tuple[str, str]]) -> bool:
        """True when adding ``pairs`` again could change nothing."""
        for pair in pairs:
            known = self.entries.get(pair)
            if known is None:
                if not self.full:  # it could still be added
                    return False
            elif len(known) < MAX_IDS_KEPT:
                return False
        return True

    def result(self) -> tuple[IndexEntry, ...]:
        return tuple(IndexEntry(k, v, tuple(ids)) for (k, v), ids in self.entries.items())


def build_index(
    messages: Sequence[Message],
    *,
    contents: Sequence[str],
    max_chars: int,
    earlier: Sequence[IndexEntry] = (),
    head_chars: int = 4000,
    tail_chars: int = 1500,
) -> tuple[IndexEntry, ...]:
    """The index of ``messages`` (``contents``: their original contents) within ``max_chars``.

    Priority: tool-call entries, newest call first; then paths and URLs in tool results,
    newest first; then ``earlier`` indexes' entries. Entries keep that order.
    """
    builder = IndexBuilder(max_chars)
    if builder.full:
        return ()
    _add_calls(builder, messages)
    _add_result_paths(builder, messages, contents, head_chars, tail_chars)
    for entry in earlier:
        builder.add(entry.kind, entry.value, entry.ids)
    return builder.result()


def _add_calls(builder: IndexBuilder, messages: Sequence[Message]) -> None:
    """The tool calls' entries, newest call first. An argument string seen before is not
    parsed again, and a call whose entries have all the ids they keep is skipped."""
    seen_args: dict[tuple[str, str], list[tuple[str, str]]] = {}
    done: set[tuple[str, str]] = set()
    for m in reversed(messages):
        if not m.tool_calls or m.role != "assistant":
            continue
        ids = (m.id,) if m.id is not None else ()
        for call in m.tool_calls:
            key = (call.name, call.arguments)
            if key in done:
                continue
            pairs = seen_args.get(key)
            if pairs is None:
                pairs = seen_args[key] = call_entries(call.name, call.arguments)
            for kind, value in pairs:
                builder.add(kind, value, ids)
            if builder.saturated(pairs):
                done.add(key)
        if builder.full:
            break


def _add_result_paths(
    builder: IndexBuilder,
    messages: Sequence[Message],
    contents: Sequence[str],
    head_chars: int,
    tail_chars: int,
) -> None:
    """Paths and URLs in the tool results, newest first, read within the serializer's
    head/tail cut (a result without a "/" there is skipped unread)."""
    keep = head_chars + tail_chars
    for m, text in zip(reversed(messages), reversed(contents), strict=True):
        if builder.full:
            break
        if m.role != "tool":
            continue
        if len(text) > keep:
            cut = len(text) - tail_chars
            if text.find("/", 0, head_chars) == -1 and text.find("/", cut) == -1:
                continue
            text = text[:head_chars] + "\n" + text[cut:]
        elif "/" not in text:
            continue
        ids = (m.id,) if m.id is not None else ()
        for kind, value in paths_and_urls(text):
            builder.add(kind, _clip(value), ids)


def _ids_text(ids: Sequence[int]) -> str:
    """The newest ids an entry was seen in, oldest first, "…" when there were more."""
    if not ids:
        return ""
    newest = sorted(set(ids))[-MAX_IDS_SHOWN:]
    shown = [f"#{i}" for i in newest]
    if len(set(ids)) > MAX_IDS_SHOWN:
        shown.append("…")
    return f" ({', '.join(shown)})"


def render_index(entries: Sequence[IndexEntry], language: str, max_chars: int) -> str:
    """The index section (empty when there is nothing or no room), at most ``max_chars``:
    entries taken in priority order while they fit, then listed by kind."""
    if not entries:
        return ""
    header = HEADER["zh" if language == "zh" else "en"]
    used = len(header)
    chosen: list[tuple[int, int, str]] = []
    order = {kind: n for n, kind in enumerate(KINDS)}
    for n, entry in enumerate(entries):
        line = f"- {entry.kind} {entry.value}{_ids_text(entry.ids)}"
        if used + 1 + len(line) > max_chars:
            continue
        chosen.append((order.get(entry.kind, len(KINDS)), n, line))
        used += 1 + len(line)
    if not chosen:
        return ""
    return "\n".join([header, *(line for _, _, line in sorted(chosen))])


def parse_index(text: str) -> tuple[IndexEntry, ...]:
    """The entries of the index section in a summary's text (none when it has none)."""
    start = -1
    for header in HEADERS:
        start = text.find(header)
        if start != -1:
            start += len(header)
            break
    if start == -1:
        return ()
    entries: list[IndexEntry] = []
    for line in text[start:].splitlines():
        if not line.strip():
            if entries:
                break
            continue
        found = _ENTRY.match(line)
        if found is None:
            break
        ids = tuple(int(i[1:]) for i in (found.group(3) or "").split(", ") if i.startswith("#"))
        entries.append(IndexEntry(found.group(1), found.group(2), ids))
    return tuple(entries)
