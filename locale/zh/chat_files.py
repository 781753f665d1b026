"""Chinese wording of export and import from the UI (issue 26 item 5)."""

from __future__ import annotations

ZH: dict[str, str | list[str]] = {
    "Export": "导出",
    "Export the chat as a file": "把对话导出为文件",
    "NetaClaw JSON (imports back as it is)": "NetaClaw JSON（可原样导入）",
    "Markdown": "Markdown",
    "OpenAI messages (JSON)": "OpenAI 消息（JSON）",
    "Import a chat": "导入对话",
    "A chat exported from NetaClaw (JSON: summaries, compacted messages and records come back as they were), or a list of OpenAI-format messages.": (
        "从 NetaClaw 导出的对话（JSON：摘要、已压缩的消息和记录都原样恢复），或 OpenAI 格式的消息列表。"
    ),
    "Chat file": "对话文件",
    "The file's agent, if you have one of that name": "文件中的 Agent（如果你有同名的 Agent）",
    "Import": "导入",
    "Choose a chat file to import.": "请选择要导入的对话文件。",
    "The file was not imported: %(why)s": "文件未导入：%(why)s",
}
