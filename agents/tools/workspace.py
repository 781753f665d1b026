"""A per-session folder the file tools are confined to.

Its methods block (files, regular expressions), so they are plain functions the registry
runs in a worker thread; their loops call ``check_deadline`` so a call stops soon after its
time limit. Searching uses RE2, whose time is linear in the input: a model's pattern cannot
backtrack for minutes, and the sizes below bound what one search reads.
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import re2
from django.conf import settings

from agents.tools.limits import ToolLimits
from agents.tools.registry import ToolError, check_deadline

MAX_READ_BYTES = 200_000
MAX_LIST_ENTRIES = 500
MAX_SEARCH_RESULTS = 100
MAX_PATTERN_CHARS = 1_000
MAX_SEARCH_LINE_CHARS = 10_000
MAX_SEARCH_FILE_BYTES = 2_000_000
MAX_SEARCH_FILES = 2_000
RE2_MAX_MEMORY = 8 << 20
MAX_PATH_CHARS = 1_024
# What a folder counts against the quota at least: one block of a common file system (an
# empty folder takes 4 KiB on ext4; 11,201 folders made in one step held 45 MB uncounted).
FOLDER_BYTES = 4_096

# One writer at a time per workspace, so two writes cannot both fit the quota's last room.
_WRITE_LOCKS: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()
_WRITE_LOCKS_GUARD = threading.Lock()


def session_workspace_root(session_id: object) -> Path:
    """The folder of one chat session's workspace (below ``WORKSPACE_ROOT``)."""
    return Path(settings.NETACLAW["WORKSPACE_ROOT"]) / str(session_id)


@dataclass(frozen=True, slots=True)
class WorkspaceUsage:
    bytes: int  # counted against the quota: files, and folders at FOLDER_BYTES at least
    folders: int


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    """A folder's entries in name order; none when it cannot be read."""
    check_deadline()
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _inside(entry: os.DirEntry[str], root: Path) -> bool:
    """Whether an entry of a walk below ``root`` is inside it: the walk enters no symlinked
    folder, so only a symlink itself can point out (resolving every entry instead cost a
    system call per level of its path: 25 s for a tree 1,400 deep)."""
    return not entry.is_symlink() or Path(entry.path).resolve().is_relative_to(root)


def remove_tree(root: Path) -> None:
    """Delete ``root`` and everything below it, at any depth and any path length.

    ``shutil.rmtree`` recurses once per level (Python 3.11): a tree 1,400 folders deep
    raised RecursionError, deleting its chat answered an HTML 500 and left the folder. Here
    a loop walks down and up through folder descriptors, two open at most, each step one
    name long; the stack holds only names."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(root, flags)
    except FileNotFoundError:
        return
    except NotADirectoryError:  # a file or a symlink where the folder should be
        os.unlink(root)
        return
    names: list[str] = []  # from root down to fd
    pending: list[list[str]] = []  # per level: subfolders still to delete
    try:
        pending.append(_unlink_files(fd))
        while True:
            if pending[-1]:
                name = pending[-1].pop()
                child = os.open(name, flags, dir_fd=fd)
                os.close(fd)
                fd = child
                names.append(name)
                pending.append(_unlink_files(fd))
                continue
            pending.pop()
            if not names:
                break
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(root)


def _unlink_files(fd: int) -> list[str]:
    """Delete the files and links of the folder open as ``fd``; its subfolders' names."""
    folders: list[str] = []
    with os.scandir(fd) as it:
        for entry in it:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)
    return folders


class Workspace:
    def __init__(self, root: Path, limits: ToolLimits | None = None) -> None:
        self.root = Path(root)
        self.limits = limits if limits is not None else ToolLimits.from_settings()

    def resolve(self, path: str) -> Path:
        """The real path inside the root, or a tool error (.., absolute, symlinks out, NUL,
        longer than ``MAX_PATH_CHARS``)."""
        if "\x00" in path:
            raise ToolError("path escapes the workspace")
        if len(path) > MAX_PATH_CHARS:
            raise ToolError(f"path is {len(path)} characters; the limit is {MAX_PATH_CHARS}")
        root = self._root()
        candidate = Path(path)
        if candidate.is_absolute():
            raise ToolError("path escapes the workspace")
        target = (root / candidate).resolve()
        if not target.is_relative_to(root):
            raise ToolError("path escapes the workspace")
        return target

    def _root(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root.resolve()

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.root.resolve())) or "."

    def _shown(self, filename: object) -> str:
        """A path as the model may see it: relative to the workspace, never the server's."""
        if not isinstance(filename, str | bytes | os.PathLike):
            return ""
        path = Path(os.fsdecode(filename))
        for root in (self.root.resolve(), self.root.absolute()):
            if path.is_relative_to(root):
                return str(path.relative_to(root)) or "."
        return path.name

    @contextmanager
    def _file_errors(self) -> Iterator[None]:
        """OSError → a tool error naming the workspace-relative path."""
        try:
            yield
        except OSError as exc:
            shown = self._shown(exc.filename)
            reason = exc.strerror or type(exc).__name__
            raise ToolError(f"{reason}: {shown}" if shown else reason) from None

    def _walk(self, folder: Path) -> Iterator[os.DirEntry[str]]:
        """Entries below ``folder``, depth first in name order; symlinked folders are not
        entered. A loop, not recursion: a tree deeper than Python's recursion limit (1,400
        folders, made before the depth limit) stalled every walk with RecursionError."""
        levels = [iter(_entries(folder))]
        while levels:
            entry = next(levels[-1], None)
            if entry is None:
                levels.pop()
                continue
            check_deadline()
            yield entry
            if entry.is_dir(follow_symlinks=False):
                levels.append(iter(_entries(Path(entry.path))))

    def measure(self, *, besides: Path | None = None) -> WorkspaceUsage:
        """What the workspace holds (``besides``: all but that file): its files' bytes plus
        each folder's size on disk (at least ``FOLDER_BYTES``), and its folders."""
        total = folders = 0
        for entry in self._walk(self._root()):
            if entry.is_dir(follow_symlinks=False):
                folders += 1
                total += max(FOLDER_BYTES, entry.stat(follow_symlinks=False).st_size)
            elif entry.is_file(follow_symlinks=False) and Path(entry.path) != besides:
                total += entry.stat(follow_symlinks=False).st_size
        return WorkspaceUsage(total, folders)

    def usage(self, *, besides: Path | None = None) -> int:
        """Bytes the workspace counts against its quota (``measure``)."""
        return self.measure(besides=besides).bytes

    def list_files(self, path: str = ".") -> str:
        with self._file_errors():
            folder = self.resolve(path)
            if not folder.is_dir():
                raise ToolError(f"not a folder: {path}")
            root = self.root.resolve()
            lines: list[str] = []
            more = 0
            for entry in self._walk(folder):
                if not _inside(entry, root):
                    continue
                if len(lines) >= MAX_LIST_ENTRIES:
                    more += 1
                    continue
                shown = self._relative(Path(entry.path))
                lines.append(
                    shown + ("/" if entry.is_dir() else f" ({entry.stat().st_size} bytes)")
                )
            if more:
                lines.append(f"... {more} more entries")
            return "\n".join(lines) or "(empty)"

    def read_file(self, path: str, offset: int = 0, limit: int = MAX_READ_BYTES) -> str:
        with self._file_errors():
            target = self.resolve(path)
            if not target.is_file():
                raise ToolError(f"no such file: {path}")
            limit = max(1, min(limit, MAX_READ_BYTES))
            with target.open("rb") as fh:
                fh.seek(max(0, offset))
                data = fh.read(limit + 1)
            text = data[:limit].decode("utf-8", errors="replace")
            if len(data) > limit:
                size = target.stat().st_size
                text += f"\n[truncated: file is {size} bytes; read more with offset]"
            return text

    def write_file(self, path: str, content: str) -> str:
        data = content.encode("utf-8", errors="replace")
        if len(data) > self.limits.write_bytes:
            raise ToolError(
                f"content is {len(data)} bytes; the limit is {self.limits.write_bytes} bytes "
                "per write_file call"
            )
        return self.write_bytes(path, data)

    def write_bytes(self, path: str, data: bytes) -> str:
        """``data`` to ``path``, within the workspace's depth, folder and byte limits, or
        nothing at all (a tool error says which limit); the file tools' and an upload's
        one way in (``agents.attachments``)."""
        limits = self.limits
        with self._file_errors():
            target = self.resolve(path)
            if target.is_dir():
                raise ToolError(f"not a file: {self._relative(target)}")
            root = self.root.resolve()
            depth = len(target.relative_to(root).parts) - 1
            if depth > limits.workspace_depth:
                raise ToolError(
                    f"path is {depth} folders deep; the limit is {limits.workspace_depth} "
                    "folders below the workspace root (write it higher up)"
                )
            with _write_lock(root):
                new_folders = [p for p in target.parents if p.is_relative_to(root)]
                new_folders = [p for p in new_folders if p != root and not p.exists()]
                held = self.measure(besides=target)
                if new_folders and held.folders + len(new_folders) > limits.workspace_folders:
                    raise ToolError(
                        f"workspace folder limit: writing {self._relative(target)} would "
                        f"make {len(new_folders)} folders, bringing the workspace to "
                        f"{held.folders + len(new_folders)} folders, over its limit of "
                        f"{limits.workspace_folders}; nothing was written (write into "
                        "existing folders)"
                    )
                after = held.bytes + len(data) + FOLDER_BYTES * len(new_folders)
                if after > limits.workspace_quota_bytes:
                    raise ToolError(
                        f"workspace quota exceeded: writing {len(data)} bytes to "
                        f"{self._relative(target)} would bring the workspace to "
                        f"{after} bytes, over its {limits.workspace_quota_bytes}"
                        "-byte limit; nothing was written (overwrite files with less "
                        "content to make room; each folder counts "
                        f"{FOLDER_BYTES} bytes)"
                    )
                check_deadline()
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            return f"wrote {len(data)} bytes to {self._relative(target)}"

    def search_files(self, pattern: str, path: str = ".") -> str:
        regex = _compile(pattern)
        with self._file_errors():
            folder = self.resolve(path)
            root = self.root.resolve()
            hits: list[str] = []
            files = too_big = long_lines = 0
            stopped = ""
            for entry in self._walk(folder):
                file = Path(entry.path)
                if not entry.is_file() or not _inside(entry, root):
                    continue
                files += 1
                if files > MAX_SEARCH_FILES:
                    stopped = f"[stopped after {MAX_SEARCH_FILES} files; search a narrower path]"
                    break
                try:
                    if file.stat().st_size > MAX_SEARCH_FILE_BYTES:
                        too_big += 1
                        continue
                    lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    continue
                for number, line in enumerate(lines, 1):
                    check_deadline()
                    if len(line) > MAX_SEARCH_LINE_CHARS:
                        long_lines += 1
                        line = line[:MAX_SEARCH_LINE_CHARS]
                    if regex.search(line):
                        hits.append(f"{self._relative(file)}:{number}: {line[:300]}")
                        if len(hits) >= MAX_SEARCH_RESULTS:
                            stopped = f"[stopped at {MAX_SEARCH_RESULTS} results]"
                            break
                if stopped:
                    break
            notes = [stopped] if stopped else []
            if too_big:
                notes.append(f"[skipped {too_big} files larger than {MAX_SEARCH_FILE_BYTES} bytes]")
            if long_lines:
                notes.append(
                    f"[searched only the first {MAX_SEARCH_LINE_CHARS} characters of "
                    f"{long_lines} longer lines]"
                )
            return "\n".join([*(hits or ["no matches"]), *notes])


@contextmanager
def _write_lock(root: Path) -> Iterator[None]:
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.get(str(root))
        if lock is None:
            lock = _WRITE_LOCKS[str(root)] = threading.Lock()
    with lock:
        yield


def _compile(pattern: str) -> re2._Regexp:
    """The model's pattern for RE2: a regular expression, or its literal text when it is
    not one; a clear error for what RE2 leaves out (backreferences, lookaround)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = RE2_MAX_MEMORY
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    except UnicodeEncodeError:
        raise ToolError("pattern is not valid text") from None
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        # Not a regular expression at all (say "foo(" ): search for the text itself.
        options.literal = True
        return re2.compile(pattern, options)
    raise ToolError(
        f"pattern not supported ({reason}): search_files uses RE2 syntax, which has no "
        "backreferences (\\1) or lookaround ((?=...), (?!...), (?<=...), (?<!...)); "
        "write the pattern without them"
    )
