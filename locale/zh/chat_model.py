"""Chinese wording of a chat's own model (issue 26 item 3)."""

from __future__ import annotations

ZH: dict[str, str | list[str]] = {
    "Model of this chat": "这个对话的模型",
    "The agent's model (%(model)s)": "Agent 的模型（%(model)s）",
    "This chat's history (%(tokens)s tokens) does not fit the new model: its compaction threshold is %(threshold)s of a %(window)s-token window. Compact the chat for it first?": "这个对话的历史（%(tokens)s tokens）放不进新模型：它的压缩阈值是 %(window)s tokens 窗口中的 %(threshold)s。先为它压缩这个对话吗？",
    "Compact and switch": "压缩并切换",
    "Cancel": "取消",
    "Compacted for the new model, then switched.": "已为新模型压缩上下文，并完成切换。",
    "No such enabled model channel.": "没有这个已启用的模型渠道。",
    "This chat's history is over the new model's compaction threshold: compact it for that model first, or choose a model with a larger window.": "这个对话的历史超过了新模型的压缩阈值：请先为该模型压缩，或选择窗口更大的模型。",
    "The compaction did not finish in time; the chat keeps its model.": "压缩没有按时完成；对话保留原来的模型。",
    "Give a title or a modelChannel.": "请提供 title 或 modelChannel。",
    "model channel of this chat": "这个对话的模型渠道",
}
