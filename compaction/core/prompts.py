"""The seed's summary prompts (Chinese, verbatim) and faithful English versions.

The summary follows the conversation's language (DESIGN 10). The summary
message starts with the seed's fixed prefix and says that it is reference
material about earlier turns, not new instructions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from compaction.core.types import Message

Language = Literal["zh", "en"]

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

_FOCUS: dict[str, str] = {
    "zh": "用户要求重点关注：{focus}\n",
    "en": "The user asks the summary to focus on: {focus}\n",
}


def _focus_line(language: Language, focus: str | None) -> str:
    return _FOCUS[language].format(focus=focus.strip()) if focus and focus.strip() else ""


def first_prompt(serialized: str, *, budget: int, language: Language, focus: str | None) -> str:
    return FIRST_TEMPLATE[language].format(
        serialized_conversation=serialized,
        summary_budget=budget,
        focus=_focus_line(language, focus),
    )


def update_prompt(
    previous_summary: str,
    serialized: str,
    *,
    budget: int,
    language: Language,
    focus: str | None,
) -> str:
    return UPDATE_TEMPLATE[language].format(
        previous_summary=previous_summary,
        serialized_new_turns=serialized,
        summary_budget=budget,
        focus=_focus_line(language, focus),
    )


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_LETTER = re.compile(r"[^\W\d_]")  # any letter, CJK included
# The language is a property of the conversation, not of its size: a bounded sample of
# the newest messages decides, so detection costs the same at 10 or 100k messages.
_SAMPLE_PER_MESSAGE = 4_000
_SAMPLE_TOTAL = 64_000


def _cjk_share(texts: Sequence[str]) -> tuple[int, int]:
    """(CJK characters, letters) in a sample of ``texts``, newest first."""
    sample: list[str] = []
    room = _SAMPLE_TOTAL
    for text in reversed(texts):
        if room <= 0:
            break
        piece = text[: min(_SAMPLE_PER_MESSAGE, room)]
        sample.append(piece)
        room -= len(piece)
    joined = "".join(sample)
    cjk = 0 if joined.isascii() else len(_CJK.findall(joined))
    return cjk, len(_LETTER.findall(joined))


def detect_language(messages: Sequence[Message]) -> Language:
    """zh when at least 10% of the letters the user wrote (newest first) are CJK.

    The user's own words decide: assistants in Chinese conversations still write
    long stretches of English code. With no user text, the assistant's decides.
    """
    for role in ("user", "assistant"):
        texts = [m.content for m in messages if m.role == role and not m.is_summary]
        cjk, letters = _cjk_share(texts)
        if letters:
            return "zh" if cjk / letters >= 0.10 else "en"
    return "en"


def summary_content(summary_text: str, language: Language) -> str:
    return f"{SUMMARY_PREFIX}\n\n{_FRAMING[language]}\n\n{summary_text.strip()}"


def build_summary_message(summary_text: str, language: Language) -> Message:
    """role=user so it never sits next to another assistant turn (seed §3 phase 3)."""
    return Message(role="user", content=summary_content(summary_text, language), is_summary=True)


def summary_body(content: str) -> str:
    """The bare summary of a stored summary message (for the update template's slot)."""
    if not content.startswith(SUMMARY_PREFIX):
        return content.strip()
    rest = content[len(SUMMARY_PREFIX) :].lstrip("\n")
    for framing in _FRAMING.values():
        if rest.startswith(framing):
            rest = rest[len(framing) :]
            break
    return rest.strip()
