"""Helpers for the browser tests: a scripted main + auxiliary model, test data, log-in."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.test import Client

from agents.models import Agent, ChatSession, ModelChannel
from agents.services import messages_bulk_append
from scripted_llm import Action, Fail, RecordedRequest, Reply, ScriptedLLMServer
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set
from tests.factories import make_user

MAIN_MODEL = "e2e-main-model"
AUX_MODEL = "e2e-aux-model"
PATH_PATTERN = re.compile(r"(?<![A-Za-z0-9_./-])(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.[A-Za-z0-9]+")
GOAL_PATTERN = re.compile(r"(?:目标|Goal)[:：]\s*([^\n。]+)")
PREVIOUS_GOAL = re.compile(r"## 目标\n(?!\[)([^\n]+)")  # a previous summary's goal line


def request_text(body: dict[str, Any]) -> str:
    """Everything a model request carries as text (system, messages, tool calls)."""
    return json.dumps(body.get("messages") or [], ensure_ascii=False) + json.dumps(
        body.get("system") or "", ensure_ascii=False
    )


def _unescape(text: str) -> str:
    return json.loads(json.dumps(text))


@dataclass
class ScriptedModel:
    """One scripted HTTP server for both models, told apart by the request's ``model``.

    The main model answers each turn with a short streamed reply (or what the test
    queued); the auxiliary model writes a structured summary *from the conversation it
    was given* (the goal line and every file path it finds), so a test can check that
    what the user said before a compaction reaches the model after it.
    """

    server: ScriptedLLMServer = field(default_factory=ScriptedLLMServer)
    main_script: deque[Action] = field(default_factory=deque)
    aux_script: deque[Action] = field(default_factory=deque)
    aux_delay: float = 0.0
    main_delay_per_chunk: float = 0.01
    main_input_tokens: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> ScriptedModel:
        self.server.start()
        self.server.responder = self._respond
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    @property
    def base_url(self) -> str:
        return self.server.openai_base_url

    def reset_script(self) -> None:
        self.server.reset()
        self.server.responder = self._respond
        with self.lock:
            self.main_script.clear()
            self.aux_script.clear()
            self.aux_delay = 0.0
            self.main_delay_per_chunk = 0.01
            self.main_input_tokens = None

    # -- scripting -----------------------------------------------------------------

    def queue_main(self, *actions: Action) -> None:
        with self.lock:
            self.main_script.extend(actions)

    def queue_aux(self, *actions: Action) -> None:
        with self.lock:
            self.aux_script.extend(actions)

    def requests_for(self, model: str) -> list[RecordedRequest]:
        return [r for r in self.server.requests if r.body.get("model") == model]

    def wait_for(self, model: str, count: int, timeout: float = 20.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.requests_for(model)
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise TimeoutError(f"expected {count} requests for {model}, got {self.requests_for(model)}")

    # -- answering -----------------------------------------------------------------

    def _respond(self, body: dict[str, Any], wire: str) -> Action:
        model = body.get("model")
        with self.lock:
            script = self.aux_script if model == AUX_MODEL else self.main_script
            queued = script.popleft() if script else None
            aux_delay = self.aux_delay
            per_chunk = self.main_delay_per_chunk
            input_tokens = self.main_input_tokens
        if model == AUX_MODEL:
            if aux_delay:
                time.sleep(aux_delay)
            return queued or Reply(text=self.summary_for(body))
        if queued is not None:
            return queued
        last = _last_user_text(body)
        return Reply(
            text=f"好的，收到：{last[:40].rstrip('。.!！?？')}。我会继续推进。",
            chunk_size=6,
            delay_per_chunk=per_chunk,
            input_tokens=input_tokens,
        )

    @staticmethod
    def summary_for(body: dict[str, Any]) -> str:
        text = _unescape(request_text(body)).replace("\\n", "\n")
        goal = GOAL_PATTERN.search(text) or PREVIOUS_GOAL.search(text)
        paths = sorted(set(PATH_PATTERN.findall(text)))
        lines = [
            "## 目标",
            goal.group(1).strip() if goal else "(未找到目标)",
            "## 约束与偏好",
            "保持公开 API 不变；每一步都先写测试。",
            "## 进度",
            "### 已完成",
            "阅读了现有代码并确定了拆分方案。",
            "### 进行中",
            "拆分模块。",
            "### 受阻",
            "无。",
            "## 关键决策",
            "按职责拆分模块，旧入口保留为薄包装。",
            "## 相关文件",
            *[f"- {p}" for p in paths],
            "## 下一步",
            "继续拆分并补齐测试。",
            "## 关键上下文",
            "这是端到端测试写的摘要，用来检查压缩后模型仍然知道目标与文件路径。"
            "摘要由脚本化的辅助模型根据它收到的对话内容生成：目标取自用户的第一条消息，"
            "文件路径取自对话中出现的全部路径，因此压缩后的请求里出现它们，"
            "说明用户在压缩前说过的话确实传到了压缩后的模型。",
            "## 工具与模式",
            "read_file / write_file 读写工作区文件；todo 记录待办。",
        ]
        return "\n".join(lines)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def failing(status: int = 402, message: str = "Insufficient balance") -> Fail:
    return Fail(
        status=status,
        body={"error": {"message": message, "type": "insufficient_quota"}},
        should_retry=False,
    )


@dataclass
class Data:
    """Test data, written straight to the test database the server reads."""

    llm: ScriptedModel

    def user(self, username: str = "user", *, staff: bool = False) -> Any:
        """A new user; the name gets a unique suffix (the database lives for the session)."""
        return make_user(f"{username}-{uuid.uuid4().hex[:6]}", is_staff=staff, is_superuser=staff)

    def channel(self, **fields: Any) -> ModelChannel:
        values: dict[str, Any] = {
            "name": f"E2E main {ModelChannel.objects.count() + 1}",
            "provider": "openai_compatible",
            "base_url": self.llm.base_url,
            "api_key": "sk-e2e-not-a-real-key",
            "model": MAIN_MODEL,
            "context_window": 4000,
        }
        values.update(fields)
        return ModelChannel.objects.create(**values)

    def aux_channel(self, **fields: Any) -> ModelChannel:
        values: dict[str, Any] = {
            "name": "E2E summarizer",
            "model": AUX_MODEL,
            "is_auxiliary": True,
            "context_window": 128_000,
        }
        values.update(fields)
        return self.channel(**values)

    def default_auxiliary(self, channel: ModelChannel) -> None:
        dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(channel.pk))

    def agent(self, **fields: Any) -> Agent:
        values: dict[str, Any] = {"name": "E2E 助手", "system_prompt": "You help with code."}
        values.update(fields)
        return Agent.objects.create(**values)

    def session(
        self,
        *,
        owner: Any,
        agent: Agent,
        title: str = "",
        rows: Iterable[dict[str, Any]] = (),
    ) -> ChatSession:
        session = ChatSession.objects.create(owner=owner, agent=agent, title=title)
        rows = list(rows)
        if rows:
            messages_bulk_append(session=session, rows=rows)
        return session

    def login(self, context: Any, user: Any, base_url: str) -> None:
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME]
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": base_url}]
        )


_USER_LINES = (
    "我看了一下 main.py，配置加载、命令行解析和业务逻辑都混在一个文件里，测试很难写。",
    "命令行参数现在用 argparse 手写了三百多行，能不能先抽出一个 cli 模块？",
    "配置文件既支持 YAML 又支持环境变量，优先级规则要保持不变，这一点很重要。",
    "日志初始化在 import 时就执行了，导致测试里没法替换 handler，顺便也修一下。",
    "数据库连接现在是全局变量，拆分以后希望通过参数传进去，方便在测试里用 SQLite。",
    "请保留 main() 这个入口函数的签名，外部脚本都在调用它。",
)
_ASSISTANT_LINES = (
    "明白。我先梳理依赖关系：main() 依次调用 load_config()、setup_logging() 和 run()，其中 run() 又直接读取全局的 CONFIG。",
    "建议的拆分顺序是：先抽出纯函数的配置解析，再抽出 CLI，最后把数据库连接改成显式传参，每一步都有测试兜底。",
    "配置优先级目前是：命令行参数 > 环境变量 > YAML 文件 > 默认值。我会为这四层各写一个测试用例，确保拆分后行为一致。",
    "日志的问题可以通过把 setup_logging() 推迟到 main() 里调用来解决，模块导入时不再产生副作用。",
    "数据库连接我打算放进一个小的 Database 类，构造时接收 URL，main() 负责创建并传给 run()。",
    "main() 的签名不会变，它会变成一个很薄的包装：解析参数、加载配置、组装依赖，然后调用 run()。",
)


def _paragraph(lines: tuple[str, ...], turn: int, chars: int) -> str:
    parts: list[str] = []
    i = turn
    while sum(len(p) for p in parts) < chars:
        parts.append(lines[i % len(lines)])
        i += 1
    return "".join(parts)


def conversation(
    turns: int,
    *,
    chars: int = 400,
    goal: str = "",
    paths: Iterable[str] = (),
    goal_turn: int = 2,
) -> list[dict[str, Any]]:
    """``turns`` user/assistant pairs of about ``chars`` characters each. The user message
    of turn ``goal_turn`` (0-based; by default past a protected head of 3 messages, so a
    compaction summarizes it) states ``goal`` and mentions ``paths``."""
    rows: list[dict[str, Any]] = []
    for i in range(turns):
        if i == goal_turn and (goal or paths):
            text = f"目标：{goal}。相关文件：{'、'.join(paths)}。"
        else:
            text = _paragraph(_USER_LINES, i, chars)
        rows.append({"role": "user", "content": text})
        rows.append({"role": "assistant", "content": _paragraph(_ASSISTANT_LINES, i, chars)})
    return rows


def long_answer(chars: int) -> str:
    """A long Markdown answer (a step-by-step plan) of at least ``chars`` characters."""
    sections: list[str] = []
    step = 0
    while sum(len(s) for s in sections) < chars:
        step += 1
        line = _ASSISTANT_LINES[step % len(_ASSISTANT_LINES)]
        sections.append(
            f"### 第 {step} 步\n\n{line}\n\n- 修改 `src/app/module_{step}.py`\n"
            f"- 新增测试 `tests/test_module_{step}.py`\n- 运行 `pytest -q` 确认全部通过\n"
        )
    return "\n".join(sections)
