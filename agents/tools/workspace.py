"""A per-session folder the file tools are confined to."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from agents.tools.registry import ToolError

MAX_READ_BYTES = 200_000
MAX_WRITE_BYTES = 1_000_000
MAX_SEARCH_RESULTS = 100
MAX_LIST_ENTRIES = 500


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def resolve(self, path: str) -> Path:
        """The real path inside the root, or a tool error (.., absolute, symlinks out, NUL)."""
        if "\x00" in path:
            raise ToolError("path escapes the workspace")
        self.root.mkdir(parents=True, exist_ok=True)
        root = self.root.resolve()
        candidate = Path(path)
        if candidate.is_absolute():
            raise ToolError("path escapes the workspace")
        target = (root / candidate).resolve()
        if not target.is_relative_to(root):
            raise ToolError("path escapes the workspace")
        return target

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.root.resolve())) or "."

    async def list_files(self, path: str = ".") -> str:
        return await asyncio.to_thread(self._list, path)

    def _list(self, path: str) -> str:
        folder = self.resolve(path)
        if not folder.is_dir():
            raise ToolError(f"not a folder: {path}")
        entries = sorted(folder.rglob("*"))
        lines = [
            self._relative(p) + ("/" if p.is_dir() else f" ({p.stat().st_size} bytes)")
            for p in entries[:MAX_LIST_ENTRIES]
            if p.resolve().is_relative_to(self.root.resolve())
        ]
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(f"... {len(entries) - MAX_LIST_ENTRIES} more entries")
        return "\n".join(lines) or "(empty)"

    async def read_file(self, path: str, offset: int = 0, limit: int = MAX_READ_BYTES) -> str:
        return await asyncio.to_thread(self._read, path, offset, limit)

    def _read(self, path: str, offset: int, limit: int) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise ToolError(f"no such file: {path}")
        limit = max(1, min(limit, MAX_READ_BYTES))
        with target.open("rb") as fh:
            fh.seek(max(0, offset))
            data = fh.read(limit + 1)
        text = data[:limit].decode("utf-8", errors="replace")
        if len(data) > limit:
            text += f"\n[truncated: file is {target.stat().st_size} bytes; read more with offset]"
        return text

    async def write_file(self, path: str, content: str) -> str:
        return await asyncio.to_thread(self._write, path, content)

    def _write(self, path: str, content: str) -> str:
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise ToolError(f"content is larger than {MAX_WRITE_BYTES} bytes")
        target = self.resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return f"wrote {len(data)} bytes to {self._relative(target)}"

    async def search_files(self, pattern: str, path: str = ".") -> str:
        return await asyncio.to_thread(self._search, pattern, path)

    def _search(self, pattern: str, path: str) -> str:
        try:
            regex = re.compile(pattern)
        except re.error:
            regex = re.compile(re.escape(pattern))
        folder = self.resolve(path)
        root = self.root.resolve()
        hits: list[str] = []
        for file in sorted(folder.rglob("*")):
            if not file.is_file() or not file.resolve().is_relative_to(root):
                continue
            try:
                lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for number, line in enumerate(lines, 1):
                if regex.search(line):
                    hits.append(f"{self._relative(file)}:{number}: {line[:300]}")
                    if len(hits) >= MAX_SEARCH_RESULTS:
                        return "\n".join([*hits, f"[stopped at {MAX_SEARCH_RESULTS} results]"])
        return "\n".join(hits) or "no matches"
