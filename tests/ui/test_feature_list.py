"""tests/e2e/feature_list.json names real tests, and covers the seed's whole §11 list."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED_ITEMS = [
    "单 Agent 连续发消息到 80% -> 观察自动压缩动画",
    "任意节点输入 /compact -> 观察手动流程",
    "压缩后继续，验证 Agent 记得 Goal 与文件路径",
    "切换会话视图（压缩/完整）",
    "配置无效渠道 -> 验证失败提示",
    "辅助模型欠费模拟 -> 验证错误路径",
    "压缩中输入新消息 -> 验证排队",
]


def test_every_node_id_exists() -> None:
    features = json.loads((ROOT / "tests/e2e/feature_list.json").read_text())["features"]
    assert [f["seed"] for f in features][: len(SEED_ITEMS)] == SEED_ITEMS
    for feature in features:
        assert feature["tests"], feature["id"]
        for node_id in feature["tests"]:
            path, _, name = node_id.partition("::")
            function = re.sub(r"\[.*\]$", "", name)
            source = (ROOT / path).read_text()
            assert re.search(rf"^def {function}\(", source, re.M), node_id
