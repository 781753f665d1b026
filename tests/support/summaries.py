"""What the scripted auxiliary model answers with, and how a test tells its requests apart.

Each summary passes the 200-character floor of a summary and has the seed's structure;
they differ in what the tests using them look for afterwards.
"""

from __future__ import annotations

import json
from typing import Any

# The chat tests' summary (tests/gateway).
SUMMARY = "## 目标\n修复 src/parser.py 的解析错误\n## 相关文件\n- src/parser.py\n" + "细节。" * 100

# Carries a value ("关键值 42") a test finds again in the next request's prompt
# (tests/service).
KEY_VALUE_SUMMARY = (
    "## 目标\n修复 src/parser.py\n## 相关文件\n- src/parser.py：解析器\n" + "关键值 42。" * 60
)

# Every section of the seed's structure (tests/reliability).
SEED_SUMMARY = (
    "## 目标\n继续修复 parser.py 中的 bug。\n## 进度\n- 已定位 tokenizer 的越界读取\n"
    "## 相关文件\n- src/parser.py\n## 下一步\n补一个回归测试。\n" + "细节说明。" * 60
)


def is_summary_request(body: dict[str, Any]) -> bool:
    """A request for a summary (first, update, part or merge), in either language; it
    carries no tools."""
    text = json.dumps(body, ensure_ascii=False)
    return not body.get("tools") and any(
        k in text
        for k in (
            "待摘要轮次",
            "Turns to summarize",
            "待合并的新轮次",
            "New turns to merge",
            "分段摘要：",
            "Partial summaries:",
        )
    )
