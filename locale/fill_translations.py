"""Fill empty msgstr entries of our .po files from the tables below (run after makemessages).

    .venv/bin/python manage.py makemessages -l zh_Hans -l en --ignore=.venv --ignore=var --ignore=tests
    .venv/bin/python locale/fill_translations.py
    .venv/bin/python manage.py compilemessages --ignore=.venv

The tables are authoritative (they overwrite what is in the .po files, and msgmerge's
fuzzy guesses are dropped); the seed's Chinese wording
(context-compaction-design.md §8) is used verbatim where the seed has one.
"""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

ZH: dict[str, str | list[str]] = {
    # --- issue 24: durable runs ---
    "work": "工作",
    "running now": "正在运行",
    "stuck (a dead lease)": "卡住（租约已失效）",
    "stuck": "卡住",
    "Take back the leases of stopped processes (records what they ran)": (
        "收回已停止进程的租约（并记录它们运行的内容）"
    ),
    "%(n)d session(s) taken back.": "已收回 %(n)d 个会话。",
    "Interrupted: the server running this answer stopped. It is answered again by itself; if it is not, use Retry.": (
        "已中断：运行这条回答的服务器停止了。它会自动重新回答；如果没有，请点击重试。"
    ),
    "The compaction was interrupted (its server stopped); the history is unchanged": (
        "压缩被中断（运行它的服务器停止了）；历史未改变"
    ),
    "Runs (turns and compactions as jobs)": "运行（以任务运行的对话轮次与压缩）",
    "prepared compaction": "预备的压缩",
    "prepared compactions": "预备的压缩",
    "preparing": "准备中",
    "ready": "就绪",
    "running": "运行中",
    "interrupted": "已中断",
    # --- seed §8.1 token bar and status line ---
    "Auto-compaction threshold %(threshold)s%%": "自动压缩阈值 %(threshold)s%%",
    "Compacting context...": "正在压缩上下文...",
    "%(used)s/%(max)s tokens · threshold %(threshold)s%% · compacted %(counter)s time": [
        "%(used)s/%(max)s tokens · 阈值 %(threshold)s%% · 已压缩 %(counter)s 次"
    ],
    "Input %(input)s · output %(output)s · tools %(tool)s tokens · %(calls)s API calls": (
        "输入 %(input)s · 输出 %(output)s · 工具 %(tool)s tokens · %(calls)s 次 API 调用"
    ),
    "The context figure is partly estimated (4 characters per token).": (
        "上下文用量含估算部分（按每 4 个字符 1 个 token 估算）。"
    ),
    "Context window usage": "上下文用量",
    "%(used)s of %(max)s tokens (%(percent)s%%)": "已用 %(used)s / %(max)s tokens（%(percent)s%%）",
    "Compact the context now": "立即压缩上下文",
    # --- seed §8.3 bubbles and drawer ---
    "Context compacted · removed %(counter)s message · saved %(percent)s%% tokens": [
        "上下文已压缩 · 移除 %(counter)s 条消息 · 节省 %(percent)s%% token"
    ],
    "View summary": "查看摘要",
    "Compaction failed: %(error)s": "压缩失败：%(error)s",
    "— you can continue the conversation or": "可继续原对话或",
    "start a new chat": "开新对话",
    "Compaction summary": "压缩摘要",
    "Close": "关闭",
    "Written %(when)s; replaces %(counter)s earlier message.": [
        "生成于 %(when)s，替代了 %(counter)s 条早期消息。"
    ],
    "A later compaction has folded it into a newer summary.": "之后的压缩已将它并入更新的摘要。",
    "Summary of the earlier conversation": "早期对话摘要",
    "The model sees this hand-off summary instead of the compacted messages.": (
        "模型看到的是这份交接摘要，而不是已压缩的原始消息。"
    ),
    # failure reasons (agents.reasons), in the page's language
    "No auxiliary model is configured": "未配置辅助模型",
    "There is nothing to compact yet": "没有可压缩的消息",
    "One message is too large to compact; consider splitting it": "单条消息过长，建议拆分",
    "The system prompt is too long: it alone exceeds the compaction threshold; shorten it on the agent's page": (
        "系统提示过长：仅系统提示就已超过压缩阈值，请在 Agent 页面精简"
    ),
    "A summary would not save any tokens": "摘要不会减少 token",
    "The summary came back empty or unusually short": "摘要为空或异常短",
    "The summary came back unusually short for what it summarizes": "摘要相对于被压缩的内容异常短",
    'The protected first messages alone leave no room for a summary under the compaction threshold; lower "protected head messages" or shorten them': (
        "受保护的开头消息已占满压缩阈值，没有空间放摘要；请调低「保护头部消息数」或精简这些消息"
    ),
    "The latest messages are too large to keep beside a summary under the threshold; split them or start a new chat": (
        "最新的消息过大，加上摘要会超过压缩阈值；请拆分消息或开始新对话"
    ),
    "The summary was cut off by the auxiliary model's output limit, twice": "摘要两次被辅助模型的输出长度上限截断",
    "The auxiliary model answered with a tool call instead of a summary, twice": "辅助模型两次以工具调用代替摘要作答",
    "The auxiliary model returned only reasoning, no summary, twice": "辅助模型两次只返回推理内容，没有摘要",
    "The summary came back empty, twice": "摘要两次返回为空",
    "The summary came back longer than what it summarizes, twice": "摘要两次比被压缩的内容还长",
    "The summary does not fit under the compaction threshold, even shorter": "摘要过长，重试后仍无法放入压缩阈值之内",
    "rebuild summaries from the originals": "从原始消息重建摘要",
    "search the compacted history": "检索已压缩的历史",
    "Search the compacted history": "检索已压缩的历史",
    "The agent may search and read the original messages that compaction replaced.": (
        "智能体可以检索和阅读被压缩替换的原始消息。"
    ),
    "Recall of compacted history": "已压缩历史的回溯",
    "The agent may search and read the original messages that compaction replaced (the search_history and read_history_message tools).": (
        "智能体可以检索和阅读被压缩替换的原始消息（search_history 与 read_history_message 工具）。"
    ),
    "Rebuild summaries from the originals": "从原始消息重建摘要",
    "Every compaction summarizes the original messages again instead of updating the previous summary; it happens anyway once summaries of summaries run three deep.": (
        "每次压缩都重新总结原始消息，而不是更新上一份摘要；摘要的摘要达到三层时会自动这样做。"
    ),
    "The history changed during the compaction; try again": "压缩期间历史已变化，请重试",
    "The summary could not be stored": "写入摘要失败",
    "A compaction of this session is already in progress; this request was skipped.": (
        "该会话已有压缩正在进行，本次请求已跳过。"
    ),
    "The context is under the threshold; there is nothing to compact": "上下文未超过阈值，无需压缩",
    "The model did not answer in time": "模型未能及时响应",
    "The model provider is rate limiting requests": "模型服务商正在限流",
    "The model provider failed": "模型服务商出错",
    "The model provider sent a response that could not be read": "模型服务商返回了无法解析的响应",
    "Could not connect to the model provider": "无法连接模型服务商",
    "The model provider refused the API key": "模型服务商拒绝了 API Key",
    "The model provider rejected the request": "模型服务商拒绝了请求",
    "%(what)s (HTTP %(status)s)": "%(what)s（HTTP %(status)s）",
    "%(what)s: %(detail)s": "%(what)s：%(detail)s",
    "This agent has no model channel yet, so it cannot answer. Add one (an Anthropic, OpenAI or DeepSeek key, or an OpenAI-compatible server such as Ollama or vLLM) and choose it on the agent's page.": (
        "此 Agent 还没有配置模型渠道，暂时无法回答。请添加一个模型渠道（Anthropic、OpenAI 或 DeepSeek 的 API Key，或 Ollama、vLLM 等 OpenAI 兼容服务），并在 Agent 页面选择它。"
    ),
    "The agent stopped after its step limit; send a message to continue.": (
        "Agent 已达到步数上限而停止；发送消息即可继续。"
    ),
    "Something went wrong on the server; the chat can go on.": "服务器出错了，对话可以继续。",
    "Only JSON text frames are accepted": "只接受 JSON 文本帧",
    "The message is too large to send; shorten it or send it in parts": "消息过大，无法发送；请精简或分段发送",
    "The frame is not valid JSON": "消息帧不是有效的 JSON",
    "A frame must be a JSON object": "消息帧必须是 JSON 对象",
    "Unknown frame type": "未知的消息帧类型",
    "A field of the frame is missing or has the wrong type": "消息帧的字段缺失或类型错误",
    "The message is empty": "消息为空",
    "The message is too long; shorten it or send it in parts": "消息过长；请精简或分段发送",
    # --- seed §8.4 history views ---
    "Showing the full history (including compacted messages)": "当前显示完整历史（含已压缩消息）",
    "Switch back to the compacted view": "切换回压缩视图",
    "History view": "历史视图",
    "Compacted": "压缩",
    "Full": "完整",
    "Full history shown; switch to the compacted view": "当前为完整历史，切换到压缩视图",
    "Full / compacted: switch to the compacted view": "完整/压缩：切换到压缩视图",
    "Compacted view; show the full history": "当前为压缩视图，查看完整历史",
    "Full / compacted: show the full history": "完整/压缩：查看完整历史",
    "compacted": "已压缩",
    "pruned": "已裁剪",
    # --- seed §8.5 agent page ---
    "Context compaction": "上下文压缩",
    "Auxiliary model": "辅助模型",
    "Inherit the system default": "继承全局默认",
    "Only channels marked as usable as auxiliary model are listed.": "仅列出标记为「可作为辅助模型」的渠道。",
    "Compaction strategy": "压缩策略",
    "More strategies are in development": "更多策略开发中",
    "Lossy summary": "有损摘要（lossy）",
    "Trigger threshold": "触发阈值",
    "Protected head": "保护头部",
    "Leave blank to inherit the system-level setting.": "留空 = 继承系统级配置",
    "{low}%–{high}%, in steps of {step}%. Automatic compaction starts when the context reaches this share of the model's window.": (
        "{low}%–{high}%，步进 {step}%。上下文占用达到模型窗口的这一比例时自动压缩。"
    ),
    "{low}–{high} messages at the start of the chat are never compacted.": "对话开头的 {low}–{high} 条消息永远不会被压缩。",
    "The trigger threshold must be between {low}% and {high}%, in steps of {step}%.": (
        "触发阈值必须在 {low}% 到 {high}% 之间，步进 {step}%。"
    ),
    "Enter the trigger threshold as a whole number between {low} and {high}.": "请输入 {low} 到 {high} 之间的整数作为触发阈值。",
    "Enter the protected head as a whole number between {low} and {high}.": "请输入 {low} 到 {high} 之间的整数作为保护头部。",
    "The protected head must be between {low} and {high} messages.": "保护头部必须在 {low} 到 {high} 条消息之间。",
    "The system default is “%(name)s”.": "全局默认为「%(name)s」。",
    "No system default is configured yet: compaction fails until one is chosen here or set as the system default.": (
        "尚未配置全局默认辅助模型：在此选择一个或设置全局默认之前，压缩会失败。"
    ),
    # --- seed §8.6 channels ---
    "Usable as auxiliary model": "可作为辅助模型",
    "usable as auxiliary model": "可作为辅助模型",
    "Ticked channels appear in the agent page's auxiliary model list.": (
        "勾选后该渠道出现在 Agent 编辑页「辅助模型」下拉中。"
    ),
    "Model channels": "模型渠道",
    "Model channel": "模型渠道",
    "model channel": "模型渠道",
    "model channels": "模型渠道",
    "Add a model channel": "添加模型渠道",
    "Edit model channel “%(name)s”": "编辑模型渠道「%(name)s」",
    "Manage model channels": "管理模型渠道",
    "Endpoint": "端点",
    "Provider": "提供商",
    "provider": "提供商",
    "Base URL": "Base URL",
    "base URL": "Base URL",
    "Model": "模型",
    "model": "模型",
    "Context window (tokens)": "上下文窗口（tokens）",
    "context window (tokens)": "上下文窗口（tokens）",
    "Leave blank to use the known window of the model.": "留空则使用该模型已知的窗口大小。",
    "API key": "API Key",
    "key set": "已设置密钥",
    "no key": "未设置密钥",
    "A key is set. Leave blank to keep it.": "已设置密钥。留空则保持不变。",
    "Not set. Needed for Anthropic, OpenAI and DeepSeek; local servers usually need none.": (
        "未设置。Anthropic、OpenAI 和 DeepSeek 需要密钥；本地服务通常不需要。"
    ),
    "Remove the stored key": "删除已保存的密钥",
    "This provider needs an API key.": "该提供商需要 API Key。",
    "Required for OpenAI-compatible servers, e.g. Ollama http://127.0.0.1:11434/v1 or vLLM http://127.0.0.1:8000/v1. Optional for the others (a proxy).": (
        "OpenAI 兼容服务必填，例如 Ollama http://127.0.0.1:11434/v1 或 vLLM http://127.0.0.1:8000/v1；其他提供商可选（代理）。"
    ),
    "An OpenAI-compatible channel needs a base URL, e.g. http://127.0.0.1:11434/v1 for Ollama.": (
        "OpenAI 兼容渠道必须填写 Base URL，例如 Ollama 的 http://127.0.0.1:11434/v1。"
    ),
    "OpenAI-compatible (Ollama, vLLM, …)": "OpenAI 兼容（Ollama、vLLM 等）",
    "Enabled": "启用",
    "enabled": "启用",
    "Use": "用途",
    "system default auxiliary": "全局默认辅助模型",
    "No model channel yet.": "还没有模型渠道。",
    "A channel is a model endpoint: an Anthropic, OpenAI or DeepSeek key, or an OpenAI-compatible server such as Ollama (http://127.0.0.1:11434/v1) or vLLM (http://127.0.0.1:8000/v1). Keys are stored on the server and never shown again.": (
        "渠道就是一个模型端点：Anthropic、OpenAI 或 DeepSeek 的 API Key，或 OpenAI 兼容服务，如 Ollama（http://127.0.0.1:11434/v1）或 vLLM（http://127.0.0.1:8000/v1）。密钥只保存在服务器上，不会再次显示。"
    ),
    "Model channel created.": "模型渠道已创建。",
    "Model channel saved.": "模型渠道已保存。",
    "Only staff can manage model channels.": "只有管理员可以管理模型渠道。",
    "No such model channel.": "没有这个模型渠道。",
    "Write-only. Leave blank to keep the stored key.": "只写字段。留空则保留已保存的密钥。",
    "Write-only. Blank or absent on update keeps the stored key.": "只写字段。更新时留空或不传则保留已保存的密钥。",
    "base_url is required for the openai_compatible provider.": "openai_compatible 提供商必须填写 base_url。",
    "%(value)r is not the id of a model channel.": "%(value)r 不是模型渠道的 ID。",
    # --- no model channel help ---
    "The model channel “%(channel)s” of “%(name)s” is disabled, so it cannot answer.": (
        "「%(name)s」的模型渠道「%(channel)s」已停用，暂时无法回答。"
    ),
    "“%(name)s” has no model channel yet, so it cannot answer.": "「%(name)s」还没有配置模型渠道，暂时无法回答。",
    "Add a channel with an Anthropic, OpenAI or DeepSeek API key, or point it at an OpenAI-compatible local server such as Ollama (http://127.0.0.1:11434/v1) or vLLM (http://127.0.0.1:8000/v1), then choose it on the agent's page.": (
        "添加一个模型渠道：填入 Anthropic、OpenAI 或 DeepSeek 的 API Key，或连接 OpenAI 兼容的本地服务，如 Ollama（http://127.0.0.1:11434/v1）或 vLLM（http://127.0.0.1:8000/v1），然后在 Agent 页面选择它。"
    ),
    "Edit the agent": "编辑 Agent",
    "Ask an administrator to add a model channel.": "请联系管理员添加模型渠道。",
    # --- chat page ---
    "Chats": "对话",
    "Your chats": "你的对话",
    "New chat": "新对话",
    "Agent": "Agent",
    "agent": "Agent",
    "agents": "Agent",
    "Agents": "Agent",
    "No agent available": "没有可用的 Agent",
    "No chats yet.": "还没有对话。",
    "Recent chats": "最近的对话",
    "Title": "标题",
    "title": "标题",
    "Updated": "更新时间",
    "Compactions": "压缩次数",
    "compactions": "压缩次数",
    "Pick an agent and start a new chat. Long conversations are compacted automatically when they near the model's context window; type /compact to compact at any time.": (
        "选择一个 Agent 开始新对话。长对话接近模型上下文窗口时会自动压缩；也可以随时输入 /compact 手动压缩。"
    ),
    "No agent is available to you yet.": "你还没有可用的 Agent。",
    "Create one in the admin.": "在管理后台创建一个。",
    "Choose one of your agents.": "请选择一个可用的 Agent。",
    "Choose one of your agents to start a chat.": "请选择一个可用的 Agent 来开始对话。",
    "Message": "输入消息",
    "Messages": "消息",
    "Send": "发送",
    "Enter to send, Shift+Enter for a new line; /compact [focus] compacts the context": (
        "Enter 发送，Shift+Enter 换行；/compact [重点] 压缩上下文"
    ),
    "Unknown command __NAME__. Available: /compact [focus]": "未知命令 __NAME__。可用命令：/compact [重点]",
    "Type a message first.": "请先输入消息。",
    "Compaction requested.": "已请求压缩。",
    "Say hello — or type /compact at any time to compact the context.": (
        "打个招呼吧——也可以随时输入 /compact 压缩上下文。"
    ),
    "Load earlier messages": "加载更早的消息",
    "Tool result": "工具结果",
    "Tool call": "工具调用",
    "error": "出错",
    "Thinking…": "思考中…",
    "Agent settings": "Agent 设置",
    "Connecting…": "连接中…",
    "Connected": "已连接",
    "Disconnected, reconnecting…": "连接已断开，正在重连…",
    "Dismiss": "关闭",
    "Back to the chat": "返回对话",
    "No such chat.": "没有这个对话。",
    "No such message.": "没有这条消息。",
    "No such summary.": "没有这份摘要。",
    "No such session.": "没有这个会话。",
    "No such agent.": "没有这个 Agent。",
    "auto-compaction paused": "自动压缩已暂停",
    # --- agents pages ---
    "Name": "名称",
    "name": "名称",
    "System prompt": "系统提示",
    "system prompt": "系统提示",
    "— none (the agent cannot answer) —": "— 无（Agent 无法回答）—",
    "Edit agent “%(name)s”": "编辑 Agent「%(name)s」",
    "Basics": "基本信息",
    "Save": "保存",
    "Cancel": "取消",
    "Edit": "编辑",
    "New agent (admin)": "新建 Agent（管理后台）",
    "Actions": "操作",
    "shared": "共享",
    "none": "无",
    "system default": "全局默认",
    "new": "新建",
    "Agent saved.": "Agent 已保存。",
    "Only staff can change a shared agent.": "只有管理员可以修改共享 Agent。",
    "Only staff can share an agent with everyone.": "只有管理员可以把 Agent 共享给所有人。",
    "Blank: shared with every user.": "留空：所有用户共享。",
    "auxiliary model channel": "辅助模型渠道",
    "Blank: inherit the system default.": "留空：继承全局默认。",
    "compaction strategy": "压缩策略",
    "compaction threshold (%)": "压缩阈值（%）",
    "protected head messages": "保护头部消息数",
    "Agent %(id)s does not exist or is not available to you.": "Agent %(id)s 不存在或你无权使用。",
    "A channel marked usable as auxiliary model; null inherits the default.": (
        "一个标记为可作为辅助模型的渠道；为空则继承全局默认。"
    ),
    "Channel %(id)s is not marked usable as auxiliary model.": "渠道 %(id)s 未标记为可作为辅助模型。",
    "{field} must be between {low} and {high}.": "{field} 必须在 {low} 到 {high} 之间。",
    "Optional focus for the summary, at most 2000 characters.": "可选的摘要重点，最多 2000 个字符。",
    "Unknown view %(view)r; use 'compacted' or 'full'.": "未知视图 %(view)r；请使用 'compacted' 或 'full'。",
    "Invalid request body.": "请求体无效。",
    "An entry named %(name)s already exists.": "已存在名为 %(name)s 的条目。",
    "No such dictionary entry.": "没有这个字典条目。",
    "Agents and chats": "Agent 与对话",
    "Project": "项目",
    "Web": "网页",
    # --- models ---
    "chat session": "对话",
    "chat sessions": "对话",
    "system": "系统",
    "user": "用户",
    "assistant": "助手",
    "tool": "工具",
    "message": "消息",
    "messages": "消息",
    "content": "内容",
    "System": "系统",
    "key": "键",
    "dictionary type": "字典类型",
    "dictionary types": "字典类型",
    "value": "值",
    "remark": "备注",
    "dictionary entry": "字典条目",
    "dictionary entries": "字典条目",
    # --- admin ---
    "Compact the selected sessions now": "立即压缩所选会话",
    # templates/admin/base_site.html repeats Django's own admin strings (same wording)
    "Django site admin": "Django 站点管理员",
    "Django administration": "Django 管理",
    # --- shell ---
    "Simplified Chinese": "简体中文",
    "English": "English",
    "Main": "主导航",
    "Admin": "管理后台",
    "Language": "语言",
    "Switch": "切换",
    "Log out": "退出登录",
    "Logged out": "已退出登录",
    "Log in again": "重新登录",
    "You are logged in as %(name)s.": "当前登录用户：%(name)s。",
    "You are not logged in.": "你尚未登录。",
    "Log in": "登录",
    "Your user name and password didn't match. Please try again.": "用户名或密码不正确，请重试。",
    "User name": "用户名",
    "Password": "密码",
    "The first run of make run prints the local admin account on the console (also kept in var/admin-credentials.txt).": (
        "首次运行 make run 时会在控制台打印本地管理员账号（也保存在 var/admin-credentials.txt）。"
    ),
    # --- core (condense) ---
    # --- chat page (#16 chat list, phone, reading, waiting) ---
    "Copy": "复制",
    "Copied": "已复制",
    "Could not copy": "复制失败",
    "Copy the answer (Markdown)": "复制回答（Markdown）",
    "Skip to content": "跳到正文",
    "Skip to the message box": "跳到输入框",
    "Skip to the messages": "跳到消息",
    "Menu": "菜单",
    "Close the chat list": "关闭对话列表",
    "Rename": "重命名",
    "Rename “%(title)s”": "重命名「%(title)s」",
    "Delete “%(title)s”": "删除「%(title)s」",
    "Rename the chat": "重命名对话",
    "Delete the chat": "删除对话",
    "Delete the chat?": "删除此对话？",
    "“<strong data-delete-title></strong>” is deleted for good, with all its messages and the files in its workspace.": (
        "「<strong data-delete-title></strong>」将被永久删除，包括它的全部消息和工作区中的文件。"
    ),
    "“<strong>%(title)s</strong>” is deleted for good, with all its messages and the files in its workspace.": (
        "「<strong>%(title)s</strong>」将被永久删除，包括它的全部消息和工作区中的文件。"
    ),
    "Deleted the chat “%(title)s”.": "已删除对话「%(title)s」。",
    "Enter a title.": "请输入标题。",
    "This chat was deleted.": "此对话已被删除。",
    "A new chat with “%(name)s”. It is saved when you send its first message.": (
        "与「%(name)s」的新对话。发送第一条消息后才会保存。"
    ),
    "Nothing to compact yet: send a message first.": "还没有可压缩的内容：请先发送一条消息。",
    "This agent cannot answer until it has a model channel, so nothing can be sent yet.": (
        "此 Agent 配置好模型渠道之前无法回答，所以暂时不能发送消息。"
    ),
    "__N__ s": "__N__ 秒",
    "waiting for __MODEL__": "等待 __MODEL__ 回答",
    "__MODEL__ is writing the summary": "__MODEL__ 正在撰写摘要",
    "waiting for the auxiliary model": "等待辅助模型",
    "No answer for a while: the model may be slow or unreachable. Stop ends the wait.": (
        "已经等了一段时间：模型可能很慢或无法连接。点「停止」可结束等待。"
    ),
    "The context is %(percent)s%% of the model's window: the next message will most likely be refused.": (
        "上下文已达模型窗口的 %(percent)s%%：下一条消息很可能会被拒绝。"
    ),
    "Automatic compaction is paused: compact now, or start a new chat with this agent.": (
        "自动压缩已暂停：请立即压缩，或与此 Agent 开始新对话。"
    ),
    "Compact now, or start a new chat with this agent.": "请立即压缩，或与此 Agent 开始新对话。",
    "Compact now": "立即压缩",
    # --- configuration pages (#16 auxiliary default, agents, channels) ---
    "Inherit the system default: {name}": "继承全局默认：{name}",
    "Shared with every user": "共享给所有用户",
    "Every user may chat with a shared agent; only staff may change it. Unticked, the agent is yours alone.": (
        "所有用户都可以与共享 Agent 对话，只有管理员可以修改它。不勾选则只属于你。"
    ),
    "Agent created.": "Agent 已创建。",
    "The agent was not deleted: it still has chats.": "Agent 未删除：仍有对话在使用它。",
    "Agent “%(name)s” deleted, with its %(count)d chat.": [
        "已删除 Agent「%(name)s」及其 %(count)d 个对话。"
    ],
    "Agent “%(name)s” deleted.": "已删除 Agent「%(name)s」。",
    "Only staff can choose the auxiliary model of the shared agent “%(name)s”: ask an administrator to make a model channel the default auxiliary model.": (
        "只有管理员可以为共享 Agent「%(name)s」选择辅助模型：请联系管理员把一个模型渠道设为默认辅助模型。"
    ),
    "“%(name)s” is now the default auxiliary model: compaction summarizes with it for every agent without an auxiliary model of its own.": (
        "「%(name)s」现在是默认辅助模型：没有单独设置辅助模型的 Agent 都用它来生成压缩摘要。"
    ),
    "The model “%(model)s” is not in the table of known models, so its context window is taken as %(tokens)s tokens. Enter the window your server serves if it differs.": (
        "模型「%(model)s」不在已知模型表中，其上下文窗口按 %(tokens)s tokens 计算。如果你的服务实际窗口不同，请填写上下文窗口。"
    ),
    "A disabled channel cannot be the default auxiliary model; enable it first.": (
        "已停用的渠道不能作为默认辅助模型，请先启用它。"
    ),
    "New agent": "新建 Agent",
    "Delete agent": "删除 Agent",
    "Delete": "删除",
    "Delete “%(name)s”": "删除「%(name)s」",
    "Create one": "新建一个",
    "Compaction summarizes with “%(name)s” (%(model)s), chosen for this agent.": (
        "压缩使用「%(name)s」（%(model)s）生成摘要：这是为该 Agent 单独选择的辅助模型。"
    ),
    "Compaction summarizes with “%(name)s” (%(model)s), the system default auxiliary model.": (
        "压缩使用「%(name)s」（%(model)s）生成摘要：这是全局默认辅助模型。"
    ),
    "The auxiliary model chosen for this agent, “%(name)s”, is disabled, so the system default is used.": (
        "为该 Agent 选择的辅助模型「%(name)s」已停用，因此使用全局默认辅助模型。"
    ),
    "No auxiliary model: /compact and automatic compaction fail until there is one.": (
        "没有可用的辅助模型：在设置之前，/compact 和自动压缩都会失败。"
    ),
    "The auxiliary model chosen for this agent, “%(name)s”, is disabled.": "为该 Agent 选择的辅助模型「%(name)s」已停用。",
    "The system default auxiliary model, “%(name)s”, is disabled.": "全局默认辅助模型「%(name)s」已停用。",
    "Tick “Usable as auxiliary model” on a model channel (the first one becomes the default), or make a channel the default on the model channels page.": (
        "在模型渠道上勾选「可作为辅助模型」（第一个勾选的渠道会成为默认辅助模型），或在模型渠道页把某个渠道设为默认。"
    ),
    "Choose the default auxiliary model": "选择默认辅助模型",
    "Choose an auxiliary model above, or ask an administrator to make a model channel the default auxiliary model.": (
        "请在上方选择辅助模型，或联系管理员把一个模型渠道设为默认辅助模型。"
    ),
    "Delete agent “%(name)s”?": "删除 Agent「%(name)s」？",
    "This agent cannot be deleted: %(counter)s chat uses it, and a chat keeps its agent.": [
        "无法删除该 Agent：有 %(counter)s 个对话在使用它，对话会一直保留它的 Agent。"
    ],
    "%(counter)s of them belongs to another user; it has to be deleted by its owner first.": [
        "其中 %(counter)s 个属于其他用户，需要先由其所有者删除。"
    ],
    "Keep the agent": "保留 Agent",
    "You have %(counter)s chat with this agent. A chat keeps its agent, so the chat has to go with it.": [
        "你有 %(counter)s 个使用该 Agent 的对话。对话会一直保留它的 Agent，所以这些对话需要一并删除。"
    ],
    "Also delete my %(counter)s chat with it, its messages and its workspace files": [
        "同时删除我的 %(counter)s 个相关对话及其消息和工作区文件"
    ],
    "No chat uses this agent. Deleting it cannot be undone.": "没有对话使用该 Agent。删除后无法恢复。",
    "Compaction summarizes with this channel for every agent without an auxiliary model of its own.": (
        "没有单独设置辅助模型的 Agent 都用这个渠道生成压缩摘要。"
    ),
    "Connection": "连接",
    "Test connection": "测试连接",
    "Asking the server for its models…": "正在向服务器查询模型列表…",
    "Make default auxiliary model": "设为默认辅助模型",
    "Make default auxiliary model: %(name)s": "设为默认辅助模型：%(name)s",
    "The test uses the saved settings: save your changes first.": "测试使用已保存的设置：请先保存修改。",
    "Connection works": "连接正常",
    "The server lists %(counter)s model.": ["服务器列出了 %(counter)s 个模型。"],
    "“%(model)s” is one of them.": "其中包括「%(model)s」。",
    "“%(model)s” is not among them: check the model name.": "其中没有「%(model)s」：请检查模型名称。",
    "Models on the server": "服务器上的模型",
    "The server answered, but lists no models at this address (HTTP %(status)s). Check the base URL (for Ollama and vLLM it ends in /v1); some servers do not offer the list.": (
        "服务器有响应，但这个地址没有模型列表（HTTP %(status)s）。请检查 Base URL（Ollama 和 vLLM 的地址以 /v1 结尾）；也有服务器不提供模型列表。"
    ),
    "Failed": "失败",
    "In use: %(tokens)s tokens, as set on this channel.": "当前使用：%(tokens)s tokens，即本渠道设置的值。",
    "In use: %(tokens)s tokens, the known window of “%(model)s”.": "当前使用：%(tokens)s tokens，即「%(model)s」的已知窗口。",
    "fallback": "兜底值",
    "In use: %(tokens)s tokens, a fallback: “%(model)s” is not a known model. Enter the window your server serves.": (
        "当前使用：%(tokens)s tokens，这是兜底值：「%(model)s」不是已知模型。请填写你的服务实际提供的窗口。"
    ),
    "Context window": "上下文窗口",
    "set on the channel": "渠道设置",
    "known model": "已知模型",
    "No default auxiliary model yet: /compact fails for agents without an auxiliary model of their own. Make one channel the default below.": (
        "还没有默认辅助模型：没有单独设置辅助模型的 Agent 执行 /compact 会失败。请在下面把一个渠道设为默认。"
    ),
    # --- compaction control (#17) ---
    "%(session)s: removed %(n)d messages, tokens %(before)d → %(after)d": (
        "%(session)s：移除 %(n)d 条消息，token %(before)d → %(after)d"
    ),
    # preview before applying (issue 17 item 6)
    "Summary preview": "摘要预览",
    "Not applied yet: it replaces %(counter)s message · %(before)s → %(after)s tokens.": [
        "尚未应用：将替换 %(counter)s 条消息 · %(before)s → %(after)s token。"
    ],
    "Edit the summary before applying it": "应用前可修改摘要",
    "Only old tool outputs would be pruned: there is no summary to read.": (
        "只会裁剪旧的工具输出：没有可查看的摘要。"
    ),
    "Accept": "接受",
    "Discard": "丢弃",
    "Preview": "预览",
    "Show the summary before it applies": "先预览摘要，确认后再压缩",
    "summary": "摘要",
    "created at": "创建时间",
    "compaction preview": "压缩预览",
    "compaction previews": "压缩预览",
    "The summary is empty.": "摘要为空。",
    "No such preview.": "没有这个预览。",
    # the summary drawer, the bubble's Undo and the live summary (#17 items 1, 3, 6, 7, 12)
    "Undo": "撤销",
    "Bring the summarized messages back into the context; the summary is kept for the record": "让被摘要的消息回到上下文；摘要保留备查",
    "Summary so far": "摘要生成中",
    "Summary so far · part %(chunk)s of %(chunks)s": "摘要生成中 · 第 %(chunk)s/%(chunks)s 部分",
    "This compaction was undone: its messages are back in the context; the summary is kept for the record.": "这次压缩已撤销：原消息已回到上下文，摘要保留备查。",
    "Summary saved. The model reads the new text from the next request on.": "摘要已保存，模型从下一次请求起读取新内容。",
    "Instructions this summary was written with": "生成这份摘要时的指令",
    "The agent's standing compaction instructions, then the focus given to this compaction.": "Agent 的常驻压缩指令，以及本次压缩指定的重点。",
    "Edit summary": "编辑摘要",
    "Summary text (Markdown)": "摘要内容（Markdown）",
    "Summary text": "摘要内容",
    "The model reads the edited summary instead of the original one; the original and every edit are kept, with who made it and when.": "模型将读取编辑后的摘要而非原摘要；原摘要和每次编辑都会保留，并记录编辑人和时间。",
    "Save summary": "保存摘要",
    "What this compaction dropped": "本次压缩丢失了什么",
    "%(counter)s value of the summarized messages is in neither the summary nor the kept context. Pin a message to bring it back verbatim.": [
        "被压缩的消息中有 %(counter)s 个值既不在摘要中，也不在保留的上下文中。固定一条消息即可让它原文回到上下文。"
    ],
    "Nothing: every number, path, URL and identifier of the summarized messages is in the summary or the kept context.": "没有：被压缩消息中的数字、路径、URL 和标识符都在摘要或保留的上下文中。",
    "Edit history": "编辑记录",
    "Edited by %(who)s · %(when)s": "%(who)s 编辑于 %(when)s",
    "Text before this edit": "编辑前的内容",
    "Message #%(id)s": "消息 #%(id)s",
    "Keep this message verbatim in the context: it comes back in its place": "在上下文中原文保留这条消息：它会回到原来的位置",
    "number": "数字",
    "file path": "文件路径",
    "URL": "URL",
    "identifier": "标识符",
    "tool result": "工具结果",
    # the chat page's message menu, pins, context panel and ask-mode callout (#17 items 2, 4, 8, 11)
    "Message actions": "消息操作",
    "Pin": "固定",
    "Unpin": "取消固定",
    "Compact up to here": "压缩到此处",
    "Compact every message before this one? The model then sees a summary of them instead; this message and the later ones stay as they are.": "压缩这条消息之前的所有消息？之后模型看到的将是它们的摘要；这条消息及之后的消息保持不变。",
    "Pinned: never summarized away; it stays word for word in the compacted context.": "已固定：压缩时不会被摘要掉，原文保留在压缩后的上下文中。",
    "Send pinned=true or pinned=false.": "请提供 pinned=true 或 pinned=false。",
    "Pinned messages: %(pins)s tokens": "固定的消息：%(pins)s tokens",
    "context window button\u0004Context": "上下文",
    "What fills the context": "上下文构成",
    "Part": "组成部分",
    "Tokens": "Token 数",
    "Share of the window": "占窗口比例",
    "Tool definitions": "工具定义",
    "Pinned messages": "固定的消息",
    "Summary": "摘要",
    "Free": "剩余",
    "The breakdown shows once the chat has started.": "对话开始后即可查看上下文构成。",
    "The context reached the compaction threshold": "上下文已到达压缩阈值",
    "This agent asks before compacting: compact now, give the summary instructions first, or keep chatting as it is.": "此 Agent 压缩前会先询问：立即压缩、先给摘要指令再压缩，或保持现状继续对话。",
    "Compact with instructions": "带指令压缩",
    "Not now": "暂不压缩",
    "Instructions for the summary": "摘要指令",
    "e.g. keep every file path and the decisions we made": "例如：保留所有文件路径和已做的决定",
    "Compact with these instructions": "按此指令压缩",
    "The pinned messages alone leave no room for a summary under the compaction threshold; unpin some of them": (
        "仅固定的消息就已占满压缩阈值下的空间，无法容纳摘要；请取消固定其中一些"
    ),
    "Compaction undone: %(count)s message is back in the context.": [
        "压缩已撤销：%(count)s 条消息已回到上下文。"
    ],
    "automatically at the threshold": "到达阈值时自动压缩",
    "ask at the threshold": "到达阈值时询问",
    "off (only /compact)": "关闭（仅 /compact）",
    "automatic compaction": "自动压缩",
    "auto: compact at the threshold; ask: suggest it at the threshold; off: only when asked (/compact).": "auto：到达阈值时自动压缩；ask：到达阈值时提示是否压缩；off：仅在手动要求时（/compact）压缩。",
    "compaction instructions": "压缩指令",
    "What every summary of this agent's chats should keep or focus on.": "此 Agent 的每份对话摘要都应保留或关注的内容。",
    "compaction token cap": "压缩 token 上限",
    "Compact at this many tokens even below the threshold percentage; blank: no cap.": "上下文达到此 token 数即压缩，即使尚未到达阈值百分比；留空：不设上限。",
    "pinned": "已固定",
    "automatic": "自动",
    "manual": "手动",
    "API": "API",
    "command": "命令",
    "done": "已完成",
    "failed": "失败",
    "cancelled": "已取消",
    "skipped": "已跳过",
    "undone": "已撤销",
    "trigger": "触发方式",
    "status": "状态",
    "reason": "原因",
    "tokens before": "压缩前 token",
    "tokens after": "压缩后 token",
    "removed messages": "移除的消息",
    "auxiliary channel": "辅助渠道",
    "auxiliary model": "辅助模型",
    "auxiliary input tokens": "辅助模型输入 token",
    "auxiliary output tokens": "辅助模型输出 token",
    "requests": "请求数",
    "duration (ms)": "耗时（毫秒）",
    "started at": "开始时间",
    "instructions": "指令",
    "undone at": "撤销时间",
    "edits": "编辑记录",
    "dropped facts": "丢失的事实",
    "compaction record": "压缩记录",
    "compaction records": "压缩记录",
    "The compaction token cap must be at least {low} tokens (or blank for none).": "压缩 token 上限至少为 {low} tokens（或留空表示不设上限）。",
    "No such message in this chat": "此对话中没有这条消息",
    "Only the latest compaction that is still in effect can be undone": "只能撤销最近一次仍然生效的压缩",
    "This chat has no compaction to undo": "此对话没有可撤销的压缩",
    "This summary is no longer in effect (undone or folded into a later one)": "这份摘要已不再生效（已撤销，或已并入之后的摘要）",
    "Only a compaction summary's content can be edited": "只能编辑压缩摘要的内容",
    "chat page\u0004Automatic compaction is paused: an automatic compaction was undone; /compact resumes it.": "自动压缩已暂停：一次自动压缩已被撤销；使用 /compact 可恢复。",
    "No such compaction.": "没有这次压缩。",
    "A message id: compact only what comes before that message.": "消息 id：只压缩这条消息之前的内容。",
    "Send 'pinned' or 'content'.": "请提供 'pinned' 或 'content'。",
    "The text contains a NUL character, which cannot be stored.": "文本包含无法存储的 NUL 字符。",
    "Automatic compaction": "自动压缩",
    "Ask: at the threshold the chat asks before compacting. Off: only /compact compacts.": "询问：到达阈值时先询问再压缩。关闭：只有 /compact 才会压缩。",
    "Compaction instructions": "压缩指令",
    "What every summary should keep or focus on; /compact <focus> adds to them.": "每份摘要都应保留或关注的内容；/compact <重点> 会在此基础上追加。",
    "Compact at most at (tokens)": "最多在此 token 数时压缩",
    "Compact when the context reaches this many tokens, if that comes before the threshold (e.g. 200000 for a 1M-token model). Blank: the threshold only.": "上下文达到此 token 数时压缩（若早于阈值），例如 1M token 的模型设为 200000。留空：只按阈值。",
    # --- background compaction and notes (#14, #18) ---
    "notes before compaction": "压缩前笔记",
    "Notes before compaction": "压缩前写笔记",
    "Before an automatic compaction the agent writes notes for itself (saved to NOTES.md in its workspace); they stay verbatim after the summary.": (
        "自动压缩前，智能体先为自己写下笔记（保存到工作区的 NOTES.md），笔记会原样保留在摘要之后。"
    ),
}

# The chat page's wording for the pause reasons (compaction.trigger) and the failure hints.
ZH.update(
    {
        "chat page\x04Automatic compaction is paused: it failed twice in a row.": (
            "自动压缩已暂停：连续两次失败。"
        ),
        "chat page\x04Automatic compaction is paused: the context stayed above the threshold.": (
            "自动压缩已暂停：压缩后仍超过阈值。"
        ),
        "chat page\x04Automatic compaction is paused: one message is too large; split it.": (
            "自动压缩已暂停：单条消息过长，建议拆分。"
        ),
        "/compact still works.": "/compact 仍可使用。",
        "Choose an auxiliary model on the agent's page, or set the system default auxiliary model.": (
            "请在 Agent 页面选择辅助模型，或设置全局默认辅助模型。"
        ),
    }
)

# Hardening (issue 15): refused input, login throttling, tokens, one validation of settings.
ZH.update(
    {
        "The message contains a NUL character, which cannot be stored": (
            "消息包含 NUL 字符，无法保存"
        ),
        "Too many failed logins for this account or from this address.": (
            "该账号或该地址登录失败次数过多。"
        ),
        "Try again in %(minutes)s minute.": ["请在 %(minutes)s 分钟后重试。"],
        "The API token has expired; request a new one.": "API 令牌已过期，请重新获取。",
        "The request body is too large.": "请求体过大。",
        "The server could not answer this request; try again later.": (
            "服务器无法处理此请求，请稍后再试。"
        ),
        # the admin's unlock actions (web/admin.py, issue 27 item 7)
        "Unlock: clear the selected failed logins": "解锁：清除所选的登录失败记录",
        "Unlock logins of the selected users": "解锁所选用户的登录",
        "Cleared %(count)s failed logins.": "已清除 %(count)s 条登录失败记录。",
        "The provider or base URL changed: enter the API key again (or remove the stored key). A stored key is never sent to a new address.": (
            "服务商或 Base URL 已更改：请重新输入 API Key（或删除已保存的 Key）。"
            "已保存的 Key 绝不会发往新的地址。"
        ),
        "The context window must be at least {low} tokens (or blank for the model's own).": (
            "上下文窗口至少为 {low} tokens（留空则使用模型自身的窗口）。"
        ),
        "Enter an http:// or https:// URL.": "请输入 http:// 或 https:// 开头的 URL。",
    }
)

# Turn integrity and control (issue 14): queued input, Stop, failed turns with Retry.
ZH.update(
    {
        "The compaction was cancelled; the history is unchanged": "压缩已取消，历史未改变",
        "The conversation is too long for the model's context window": (
            "对话超出了模型的上下文窗口"
        ),
        "Stopped. What the agent had written so far is kept.": (
            "已停止。Agent 已写出的内容已保留。"
        ),
        "Nothing is running in this chat": "此对话中没有正在进行的任务",
        "There is no failed or stopped turn to retry": "没有可重试的失败或已停止的回答",
        "The agent is still working in this chat; stop it or wait for it to finish": (
            "Agent 仍在此对话中工作；请先停止，或等它完成"
        ),
        "Check the model channel “%(channel)s” (%(model)s).": (
            "请检查模型渠道“%(channel)s”（%(model)s）。"
        ),
        "%(what)s. %(check)s": "%(what)s。%(check)s",
        "The agent could not answer: %(error)s": "Agent 未能回答：%(error)s",
        "Retry": "重试",
        "stopped": "已停止",
        "Queued": "排队中",
        "Queued messages": "排队中的消息",
        "Stop": "停止",
        "Stop the agent (Esc)": "停止 Agent（Esc）",
    }
)

# No lost events, no frame too large, paged history (issue 14, items 4, 5, 8, 9).
ZH.update(
    {
        "Only the beginning of this long message is shown.": "这条消息很长，只显示了开头部分。",
        "Show the whole message": "显示完整消息",
        "'%(name)s' must be a positive integer.": "“%(name)s”必须是正整数。",
    }
)

# Strings shown only in English (an operator's admin messages).
UNTRANSLATED = {
    "%(session)s: removed %(n)d messages, tokens %(before)d → %(after)d",
}

# English msgids are their own translation.
# --- issue 25: compaction headroom, honest summary checks, usage ---
ZH.update(
    {
        "input price per million tokens": "每百万输入 token 价格",
        "output price per million tokens": "每百万输出 token 价格",
        "Input price per million tokens": "每百万输入 token 价格",
        "Output price per million tokens": "每百万输出 token 价格",
        "Optional, in your currency: usage then shows a cost.": "可选，以你的货币计：用量将显示费用。",
        "compaction target (percent of the threshold)": "压缩目标（阈值的百分比）",
        "Compaction target": "压缩目标",
        "The compaction target must be between {low}% and {high}% of the threshold.": (
            "压缩目标必须在阈值的 {low}% 到 {high}% 之间。"
        ),
        "Where a compaction lands, in percent of the threshold ({low}–{high}): the room left before the next one.": (
            "压缩后上下文落在阈值的百分之 {low}–{high}：为下一次压缩前留出的空间。"
        ),
        'What must be kept leaves no room for a summary worth writing under the threshold; unpin messages, lower "protected head messages" or start a new chat': (
            "必须保留的内容在阈值内已没有空间容纳一份有价值的摘要；请取消置顶消息、调低“受保护的开头消息数”或开新对话"
        ),
        "The earlier summary is too long to fold into the room left; undo a compaction or start a new chat": (
            "之前的摘要过长，无法并入剩余空间；请撤销一次压缩或开新对话"
        ),
        "The auxiliary model answered the conversation instead of summarizing it, twice": (
            "辅助模型两次都在回应对话而不是写摘要"
        ),
        "The auxiliary model refused to write the summary, twice": "辅助模型两次拒绝写摘要",
        "The auxiliary model wrote about the task instead of the summary, twice": (
            "辅助模型两次都在谈论任务本身而不是写摘要"
        ),
        "The summary came back without the sections a hand-off needs, twice": (
            "摘要两次都缺少交接所需的章节"
        ),
        "Usage of this chat": "本对话的用量",
        "Input tokens": "输入 token",
        "Output tokens": "输出 token",
        "Calls": "调用次数",
        "Chat": "对话",
        "Compaction": "压缩",
        "Cost at the channels' prices: %(cost)s": "按渠道价格计算的费用：%(cost)s",
        "usage": "用量",
    }
)


EN: dict[str, str | list[str]] = {}


def _feature_tables() -> None:
    """Add the tables in ``locale/zh/*.py`` (one module per feature, each with a ``ZH`` dict):
    features built side by side each keep their wording in a file of their own."""
    for module in sorted((HERE / "zh").glob("*.py")):
        ZH.update(runpy.run_path(str(module))["ZH"])


_feature_tables()

_ENTRY_KEY = re.compile(r'^(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?) "(.*)"$')


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _parse(lines: list[str]) -> list[dict]:
    entries: list[dict] = []
    current: dict = {"comments": [], "fields": {}}
    key = None
    for raw in [*lines, ""]:
        line = raw.rstrip("\n")
        if not line.strip():
            if current["fields"] or current["comments"]:
                entries.append(current)
            current, key = {"comments": [], "fields": {}}, None
            continue
        if line.startswith("#"):
            current["comments"].append(line)
            continue
        match = _ENTRY_KEY.match(line)
        if match:
            key = match.group(1)
            current["fields"][key] = match.group(2)
        elif line.startswith('"') and key:
            current["fields"][key] += line[1:-1]
    return entries


def _decode(value: str) -> str:
    return value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def _write(entries: list[dict]) -> str:
    out: list[str] = []
    for entry in entries:
        out.extend(entry["comments"])
        for key, value in entry["fields"].items():
            if key == "msgstr" and not entry["fields"].get("msgid"):  # header: multi-line
                out.append('msgstr ""')
                out.extend(f'"{part}\\n"' for part in value.split("\\n") if part)
            else:
                out.append(f'{key} "{value}"')
        out.append("")
    return "\n".join(out)


def _unfuzzy(comment: str) -> str:
    if not comment.startswith("#,"):
        return comment
    flags = [f.strip() for f in comment[2:].split(",") if f.strip() and f.strip() != "fuzzy"]
    return "#, " + ", ".join(flags) if flags else "#,"


def fill(path: Path, table: dict[str, str | list[str]], language: str, plurals: str) -> list[str]:
    entries = _parse(path.read_text(encoding="utf-8").splitlines())
    # msgids no longer in the code (msgmerge keeps them as "#~" comments): dropped
    entries = [e for e in entries if e["fields"]]
    missing: list[str] = []
    for entry in entries:
        fields = entry["fields"]
        msgid = _decode(fields.get("msgid", ""))
        context = _decode(fields.get("msgctxt", ""))
        if not msgid:  # header
            entry["comments"] = [c for c in entry["comments"] if c != "#, fuzzy"]
            header = fields["msgstr"]
            header = re.sub(r"Language: [^\\]*\\n", f"Language: {language}\\\\n", header)
            header = re.sub(r"Plural-Forms: [^\\]*\\n", f"Plural-Forms: {plurals}\\\\n", header)
            header = header.replace(
                "Project-Id-Version: PACKAGE VERSION", "Project-Id-Version: NetaClaw"
            )
            fields["msgstr"] = header
            continue
        fuzzy = any(c.startswith("#,") and "fuzzy" in c for c in entry["comments"])
        entry["comments"] = [_unfuzzy(c) for c in entry["comments"] if not c.startswith("#|")]
        entry["comments"] = [c for c in entry["comments"] if c != "#,"]
        translation = table.get(f"{context}\x04{msgid}" if context else msgid)
        plural_keys = sorted(k for k in fields if k.startswith("msgstr["))
        keys = plural_keys or ["msgstr"]
        if translation is None:
            if fuzzy:  # msgmerge's guess from a similar msgid: never ship it
                for k in keys:
                    fields[k] = ""
            if table is not EN and msgid in UNTRANSLATED:
                for k in keys:
                    fields[k] = ""
            elif table is not EN and not all(fields[k] for k in keys):
                missing.append(msgid)
            continue
        forms = translation if isinstance(translation, list) else [translation]
        for i, k in enumerate(keys):
            fields[k] = _quote(forms[min(i, len(forms) - 1)])
    path.write_text(_write(entries), encoding="utf-8")
    return missing


def main() -> int:
    missing = fill(HERE / "zh_Hans/LC_MESSAGES/django.po", ZH, "zh_Hans", "nplurals=1; plural=0;")
    fill(HERE / "en/LC_MESSAGES/django.po", EN, "en", "nplurals=2; plural=(n != 1);")
    for msgid in missing:
        print(f"untranslated (zh_Hans): {msgid!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
