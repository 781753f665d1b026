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
from netaclaw.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set
from tests.factories import make_user
from tests.support.llm_server import Action, Fail, RecordedRequest, Reply, ScriptedLLMServer

MAIN_MODEL = "e2e-main-model"
AUX_MODEL = "e2e-aux-model"
PATH_PATTERN = re.compile(r"(?<![\w/])(?:[\w.-]+/)+[\w.-]+\.\w+")
GOAL_PATTERN = re.compile(r"(?:目标|Goal)[:：]\s*([^\n。.]+)")


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
            text=f"好的，收到：{last[:40]}。我会继续推进。",
            chunk_size=6,
            delay_per_chunk=per_chunk,
            input_tokens=input_tokens,
        )

    @staticmethod
    def summary_for(body: dict[str, Any]) -> str:
        text = _unescape(request_text(body)).replace("\\n", "\n")
        goal = GOAL_PATTERN.search(text)
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
            "这是端到端测试写的摘要，用来检查压缩后模型仍然知道目标与文件路径。",
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


def conversation(
    turns: int, *, chars: int = 400, goal: str = "", paths: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """``turns`` user/assistant pairs of about ``chars`` characters each; the first user
    message states ``goal`` and mentions ``paths``."""
    rows: list[dict[str, Any]] = []
    filler = "这一段是为了让上下文变长的讨论内容，涉及实现细节与取舍。"
    for i in range(turns):
        if i == 0 and (goal or paths):
            text = f"目标：{goal}。相关文件：{'、'.join(paths)}。"
        else:
            text = f"第 {i + 1} 轮：" + filler * max(1, chars // len(filler))
        rows.append({"role": "user", "content": text[: max(chars, len(text))]})
        rows.append(
            {
                "role": "assistant",
                "content": f"第 {i + 1} 轮答复：" + filler * max(1, chars // len(filler)),
            }
        )
    return rows
