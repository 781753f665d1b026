"""Chinese wording of the theme switch and the phone header (issue 26 items 6 and 7)."""

from __future__ import annotations

ZH: dict[str, str | list[str]] = {
    "Colour theme": "配色主题",
    "Theme: system": "主题：跟随系统",
    "Theme: light": "主题：浅色",
    "Theme: dark": "主题：深色",
    "Chat actions": "对话操作",
}
