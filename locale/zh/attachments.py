"""Chinese wording of attachments (issue 26 item 4)."""

from __future__ import annotations

ZH: dict[str, str | list[str]] = {
    "Attached files": "附件",
    "Files for the next message": "下一条消息的附件",
    "Attach files": "添加附件",
    "Attach files (or drop them on the chat, or paste them)": "添加附件（也可以拖到对话里或直接粘贴）",
    "Remove __NAME__": "移除 __NAME__",
    "Send a first message; then files can be attached to this chat.": "请先发送第一条消息，之后就可以为这个对话添加附件。",
    "The file could not be uploaded; try again.": "文件上传失败，请重试。",
    "A file is still uploading; send when it is attached.": "还有文件正在上传，上传完成后再发送。",
    "The file is larger than one attachment may be.": "文件超过了单个附件的大小上限。",
    "The chat's workspace has no room for this file; nothing was written.": "对话的工作区没有足够空间存放这个文件；没有写入任何内容。",
    "Too many files attached to one message.": "一条消息附带的文件太多。",
    "An attached file is not in this chat's workspace any more; attach it again.": "附件已不在这个对话的工作区中，请重新添加。",
    "Choose a file to attach.": "请选择要添加的文件。",
}
