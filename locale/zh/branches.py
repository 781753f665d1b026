"""Chinese wording of regenerate, edit-and-resend and the versions (issue 26 item 1)."""

from __future__ import annotations

ZH: dict[str, str | list[str]] = {
    "Regenerate": "重新生成",
    "Answer this message again; this answer is kept as a version": "重新回答这条消息；这个回答会作为一个版本保留",
    "Edit": "编辑",
    "Edit and send again; the earlier version is kept": "编辑后重新发送；之前的版本会保留",
    "Edited message": "编辑后的消息",
    "Send": "发送",
    "Answers to this message": "这条消息的各个回答",
    "Versions of this message": "这条消息的各个版本",
    "Previous version": "上一个版本",
    "Next version": "下一个版本",
    "Answer %(version)s / %(versions)s": "回答 %(version)s / %(versions)s",
    "%(counter)s other version": ["其他 %(counter)s 个版本"],
    "Version %(number)s": "版本 %(number)s",
    "Only an answer of the agent can be regenerated.": "只能重新生成智能体的回答。",
    "Only your own messages can be edited.": "只能编辑你自己发送的消息。",
    "This part of the chat has been compacted into a summary; undo that compaction to regenerate, edit or switch versions here.": "对话的这一部分已被压缩为摘要；请先撤销那次压缩，再在这里重新生成、编辑或切换版本。",
    "No such set of versions in this chat's history.": "这个对话的历史中没有这组版本。",
    "No such version.": "没有这个版本。",
    "regenerated answer": "重新生成的回答",
    "edited message": "编辑过的消息",
    "message fork": "消息分支",
    "message forks": "消息分支",
    "The message is empty": "消息为空",
}
