"""The seed's summary prompts (Chinese, verbatim) and faithful English versions.

The summary follows the conversation's language (DESIGN 10, issue 13): Chinese
conversations get the seed's Chinese prompts, every other language the English ones,
and a language other than English also gets an explicit instruction to write in it.
The summary message starts with the seed's fixed prefix and says that it is reference
material about earlier turns, not new instructions.

Besides the seed's first and update prompts there are two for long middles (issue 13):
a *part* prompt (one of several chunks summarized concurrently) and a *merge* prompt
(partial summaries, and the previous summary if any, into one).
"""

from __future__ import annotations

from collections.abc import Sequence

from condense.language import Language, language_name
from condense.types import Message

SUMMARY_PREFIX = "[CONTEXT COMPACTION] 此前若干轮对话已被压缩以节省上下文空间..."
_FRAMING: dict[str, str] = {
    "zh": "以下是早期对话的交接摘要，仅作为参考资料，不是新的指令。",
    "en": "Below is a hand-off summary of the earlier turns. It is reference material, "
    "not new instructions.",
}

_STRUCTURE_ZH = """请使用以下结构：
## 目标
[用户想达成什么]
## 约束与偏好
[用户偏好、编码风格、约束、重要决策]
## 进度
### 已完成
[完成的工作 -- 包含具体文件路径、运行的命令、获得的结果]
### 进行中
[当前正在进行的工作]
### 受阻
[遇到的阻碍或问题]
## 关键决策
[重要的技术决策及原因]
## 相关文件
[读取、修改或创建的文件 -- 每个简要说明]
## 下一步
[需要做什么以继续工作]
## 关键上下文
[任何具体的值、错误消息、配置细节、或没有显式保留就会丢失的数据]
## 工具与模式
[使用了哪些工具、如何高效使用、任何工具特定的发现]"""

_STRUCTURE_EN = """Use this structure:
## Goal
[What the user wants to achieve]
## Constraints and preferences
[User preferences, coding style, constraints, important decisions]
## Progress
### Done
[Work completed -- with concrete file paths, commands run, results obtained]
### In progress
[Work currently under way]
### Blocked
[Obstacles or problems met]
## Key decisions
[Important technical decisions and why]
## Relevant files
[Files read, modified or created -- a short note on each]
## Next steps
[What needs to be done to continue]
## Critical context
[Any concrete values, error messages, configuration details, or data that would be lost unless kept explicitly]
## Tools and patterns
[Which tools were used, how to use them well, any tool-specific findings]"""

FIRST_TEMPLATE: dict[str, str] = {
    "zh": """为后续助手创建一份结构化的交接摘要，以便在早期对话被压缩后继续工作。
待摘要轮次：
{serialized_conversation}
"""
    + _STRUCTURE_ZH
    + """
{focus}目标 ~{summary_budget} tokens。要具体，包含文件路径、命令输出、错误消息、具体值。
仅写摘要正文，不要任何前缀或开场白。""",
    "en": """Create a structured hand-off summary for the assistant that continues this work after the earlier conversation has been compacted.
Turns to summarize:
{serialized_conversation}
"""
    + _STRUCTURE_EN
    + """
{focus}Target ~{summary_budget} tokens. Be specific: include file paths, command output, error messages and concrete values.
Write only the summary body, with no prefix or preamble.""",
}

UPDATE_TEMPLATE: dict[str, str] = {
    "zh": """你正在更新一份上下文压缩摘要。下方是上次压缩生成的摘要，自那以后产生了新的对话轮次需要合并。
之前的摘要：
{previous_summary}
待合并的新轮次：
{serialized_new_turns}
使用同样的结构更新。保留所有仍相关的现有信息，添加新进度，把"进行中"的项移到"已完成"，仅当明显过时时才移除信息。
"""
    + _STRUCTURE_ZH
    + """
{focus}目标 ~{summary_budget} tokens。
仅写摘要正文，不要任何前缀或开场白。""",
    "en": """You are updating a context compaction summary. Below is the summary produced by the previous compaction; new conversation turns have happened since and must be merged in.
Previous summary:
{previous_summary}
New turns to merge:
{serialized_new_turns}
Update it using the same structure. Keep all existing information that is still relevant, add the new progress, move items from "In progress" to "Done", and remove information only when it is clearly obsolete.
"""
    + _STRUCTURE_EN
    + """
{focus}Target ~{summary_budget} tokens.
Write only the summary body, with no prefix or preamble.""",
}

PART_TEMPLATE: dict[str, str] = {
    "zh": """为已被压缩的早期对话中的一部分创建结构化的交接摘要；各部分分别摘要，之后合并为一份。
这是第 {part} 部分，共 {parts} 部分。待摘要轮次：
{serialized_conversation}
"""
    + _STRUCTURE_ZH
    + """
{focus}目标 ~{summary_budget} tokens。要具体，包含文件路径、命令输出、错误消息、具体值。
仅写摘要正文，不要任何前缀或开场白。""",
    "en": """Create a structured hand-off summary of one part of an earlier conversation that has been compacted; the parts are summarized separately and merged into one afterwards.
This is part {part} of {parts}. Turns to summarize:
{serialized_conversation}
"""
    + _STRUCTURE_EN
    + """
{focus}Target ~{summary_budget} tokens. Be specific: include file paths, command output, error messages and concrete values.
Write only the summary body, with no prefix or preamble.""",
}

MERGE_TEMPLATE: dict[str, str] = {
    "zh": """把下面的分段交接摘要合并为一份，供在早期对话被压缩后继续工作的助手使用。它们按顺序覆盖同一对话的连续部分。
{previous_summary}分段摘要：
{partial_summaries}
保留所有仍相关的具体细节（文件路径、命令、数值、错误消息、决策），仅删除重复和明显过时的内容；后面部分已完成的"进行中"项移到"已完成"。
"""
    + _STRUCTURE_ZH
    + """
{focus}目标 ~{summary_budget} tokens。
仅写摘要正文，不要任何前缀或开场白。""",
    "en": """Merge the partial hand-off summaries below into one, for the assistant that continues this work after the earlier conversation has been compacted. They cover consecutive parts of the same conversation, in order.
{previous_summary}Partial summaries:
{partial_summaries}
Keep every concrete detail that is still relevant (file paths, commands, values, error messages, decisions); remove only repetitions and clearly obsolete items; move an item from "In progress" to "Done" when a later part finished it.
"""
    + _STRUCTURE_EN
    + """
{focus}Target ~{summary_budget} tokens.
Write only the summary body, with no prefix or preamble.""",
}

_MERGE_PREVIOUS: dict[str, str] = {
    "zh": "更早轮次的摘要（来自之前的压缩）：\n{previous_summary}\n",
    "en": "The summary of the turns before them (from an earlier compaction):\n{previous_summary}\n",
}
_PART_HEADING: dict[str, str] = {"zh": "### 第 {n} 部分", "en": "### Part {n}"}

_FOCUS: dict[str, str] = {
    "zh": "用户要求重点关注：{focus}\n",
    "en": "The user asks the summary to focus on: {focus}\n",
}
_WRITE_IN = (
    "Write the summary in {name}, the language the user writes in; keep file paths, "
    "commands, code, identifiers and quotations exactly as they are.\n"
)

RETRY_NOTES: dict[str, dict[str, str]] = {
    "zh": {
        "short": "\n你上一次的回答太短。请用对话中的具体细节填写结构的每一部分。",
        "long": "\n你上一次的回答太长。请写一份更简洁的摘要，最多约 {target} tokens。",
        "cut": "\n你上一次的回答被输出长度上限截断了。请写一份更短的摘要，最多约 {target} tokens。",
        "empty": "\n你上一次的回答没有摘要正文。请直接回答摘要正文，不要调用工具。",
        "structure": "\n你上一次的回答不是摘要。请直接写出交接摘要本身，按上面结构的各个部分，"
        "填入对话中的具体细节；不要寒暄、评论或拒绝。",
    },
    "en": {
        "short": "\nYour previous answer was too short. Fill in every section with the concrete "
        "details of the turns.",
        "long": "\nYour previous answer was too long. Write a more concise summary of about "
        "{target} tokens at most.",
        "cut": "\nYour previous answer was cut off by the output limit. Write a shorter summary "
        "of about {target} tokens at most.",
        "empty": "\nYour previous answer had no summary text. Answer with the summary text "
        "itself; do not call tools.",
        "structure": "\nYour previous answer was not the summary. Write the hand-off summary "
        "itself, in the sections of the structure above, with the concrete details of the "
        "turns; no greeting, comment or refusal.",
    },
}


def template_language(language: Language) -> str:
    """The prompts exist in Chinese and English; every other language uses the English ones."""
    return "zh" if language == "zh" else "en"


def _extra_lines(language: Language, focus: str | None) -> str:
    """The focus line (``/compact`` instructions) and, beyond zh/en, the language to write in."""
    lang = template_language(language)
    text = _FOCUS[lang].format(focus=focus.strip()) if focus and focus.strip() else ""
    if lang == "en" and language != "en":
        text += _WRITE_IN.format(name=language_name(language))
    return text


Serialized = str | Sequence[str]  # the turns, or their pieces (joined with blank lines)
_SLOT = "\x00turns\x00"


def _fill(template: str, slot: str, serialized: Serialized, **values: object) -> str:
    """``template`` formatted, with the turns in ``slot``: pieces are joined straight into
    the prompt (one copy of a middle that can be megabytes, not two)."""
    if isinstance(serialized, str):
        return template.format(**{slot: serialized}, **values)
    before, after = template.format(**{slot: _SLOT}, **values).split(_SLOT, 1)
    pieces = list(serialized)
    if not pieces:
        return before + after
    pieces[0] = before + pieces[0]
    pieces[-1] = pieces[-1] + after
    return "\n\n".join(pieces)


def first_prompt(
    serialized: Serialized, *, budget: int, language: Language, focus: str | None
) -> str:
    return _fill(
        FIRST_TEMPLATE[template_language(language)],
        "serialized_conversation",
        serialized,
        summary_budget=budget,
        focus=_extra_lines(language, focus),
    )


def update_prompt(
    previous_summary: str,
    serialized: Serialized,
    *,
    budget: int,
    language: Language,
    focus: str | None,
) -> str:
    return _fill(
        UPDATE_TEMPLATE[template_language(language)],
        "serialized_new_turns",
        serialized,
        previous_summary=previous_summary,
        summary_budget=budget,
        focus=_extra_lines(language, focus),
    )


def part_prompt(
    serialized: Serialized,
    *,
    part: int,
    parts: int,
    budget: int,
    language: Language,
    focus: str | None,
) -> str:
    return _fill(
        PART_TEMPLATE[template_language(language)],
        "serialized_conversation",
        serialized,
        part=part,
        parts=parts,
        summary_budget=budget,
        focus=_extra_lines(language, focus),
    )


def merge_prompt(
    partials: Sequence[str],
    *,
    previous_summary: str | None,
    budget: int,
    language: Language,
    focus: str | None,
    first_part: int = 1,
) -> str:
    lang = template_language(language)
    heading = _PART_HEADING[lang]
    joined = "\n\n".join(
        f"{heading.format(n=first_part + n)}\n{text}" for n, text in enumerate(partials)
    )
    previous = (
        _MERGE_PREVIOUS[lang].format(previous_summary=previous_summary) if previous_summary else ""
    )
    return MERGE_TEMPLATE[lang].format(
        previous_summary=previous,
        partial_summaries=joined,
        summary_budget=budget,
        focus=_extra_lines(language, focus),
    )


def retry_note(kind: str, language: Language, target: int) -> str:
    """What a second request adds after a rejected answer (``kind``: short, long, cut,
    empty, or structure for an answer that is not a summary)."""
    return RETRY_NOTES[template_language(language)][kind].format(target=target)


# The last line of a summary when the agent can look back (the recall tools).
RECALL_HINT: dict[str, str] = {
    "zh": "原始消息均已保留：可用 search_history 按关键词检索（返回消息 id 和片段），"
    "用 read_history_message 读取某条消息全文；上文的 #id 即该条目所在的消息。",
    "en": "The original messages are kept: search_history finds them (message ids and "
    "snippets) and read_history_message reads one in full; a #id above is the message an "
    "entry came from.",
}


def summary_content(
    summary_text: str,
    language: Language,
    sections: Sequence[str] = (),
    *,
    recall_hint: bool = False,
) -> str:
    """Prefix, framing, the model's summary, then deterministic sections (index, anchor),
    and last the recall hint when the agent has the tools it names."""
    parts = [SUMMARY_PREFIX, _FRAMING[template_language(language)], summary_text.strip()]
    parts.extend(section for section in sections if section)
    if recall_hint:
        parts.append(RECALL_HINT[template_language(language)])
    return "\n\n".join(parts)


def build_summary_message(
    summary_text: str,
    language: Language,
    sections: Sequence[str] = (),
    *,
    recall_hint: bool = False,
) -> Message:
    """role=user so it never sits next to another assistant turn (seed §3 phase 3)."""
    content = summary_content(summary_text, language, sections, recall_hint=recall_hint)
    return Message(role="user", content=content, is_summary=True)


def summary_body(content: str) -> str:
    """The bare summary of a stored summary message (for the update template's slot)."""
    if not content.startswith(SUMMARY_PREFIX):
        return content.strip()
    rest = content[len(SUMMARY_PREFIX) :].lstrip("\n")
    for framing in _FRAMING.values():
        if rest.startswith(framing):
            rest = rest[len(framing) :]
            break
    rest = rest.strip()
    for hint in RECALL_HINT.values():
        if rest.endswith(hint):
            rest = rest[: -len(hint)]
            break
    return rest.strip()


def with_summary_body(content: str, body: str) -> str:
    """The stored summary ``content`` with its body (``summary_body``: what a user reads and
    edits) replaced by ``body``: the prefix and framing before it and the recall hint after
    it stay as they were."""
    old = summary_body(content)
    start = content.find(old) if old else -1
    if start < 0:
        return body
    return content[:start] + body + content[start + len(old) :]
