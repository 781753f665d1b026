"""Chinese wording of the chat search and the chat list's date groups (issue 26 item 2)."""

from __future__ import annotations

ZH: dict[str, str | list[str]] = {
    "Today": "今天",
    "Yesterday": "昨天",
    "Previous 7 days": "过去 7 天",
    "Previous 30 days": "过去 30 天",
    "Search your chats": "搜索你的对话",
    "Search chats": "搜索对话",
    "Type at least two characters to search.": "请至少输入两个字符再搜索。",
    "Nothing matches “%(q)s”.": "没有与“%(q)s”匹配的内容。",
    "You": "你",
}
