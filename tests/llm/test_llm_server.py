"""The scripted server itself: script order, records, reset, defaults, CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from scripted_llm import (
    Fail,
    Hang,
    Reply,
    ScriptedLLMServer,
    default_input_tokens,
    request_text_chars,
)

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, body: dict, timeout: float = 5.0) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_addresses_follow_each_sdks_path_composition(llm_server: ScriptedLLMServer) -> None:
    assert llm_server.openai_base_url == f"http://127.0.0.1:{llm_server.port}/v1"
    assert llm_server.anthropic_base_url == f"http://127.0.0.1:{llm_server.port}"
    assert llm_server.base_url_for("deepseek") == llm_server.openai_base_url
    assert llm_server.base_url_for("anthropic") == llm_server.anthropic_base_url


def test_script_is_fifo_then_the_default_responder(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(Reply(text="first"), Fail(status=429))
    url = llm_server.openai_base_url + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    status, raw = post(url, body)
    assert status == 200
    assert json.loads(raw)["choices"][0]["message"]["content"] == "first"
    assert post(url, body)[0] == 429
    status, raw = post(url, body)
    assert json.loads(raw)["choices"][0]["message"]["content"] == "ok"
    assert llm_server.pending == 0


def test_requests_are_recorded_with_wire_path_headers_and_body(
    llm_server: ScriptedLLMServer,
) -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    post(llm_server.anthropic_base_url + "/v1/messages", body)
    (record,) = llm_server.wait_for_requests(1)
    assert (record.wire, record.path, record.body) == ("anthropic", "/v1/messages", body)
    assert record.headers["authorization"] == "Bearer k"


def test_responder_decides_when_the_script_is_empty(llm_server: ScriptedLLMServer) -> None:
    seen: list[str] = []

    def responder(body: dict, wire: str) -> Reply:
        seen.append(wire)
        return Reply(text=f"{wire}:{body['messages'][-1]['content']}")

    llm_server.responder = responder
    body = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
    _, raw = post(llm_server.openai_base_url + "/chat/completions", body)
    assert json.loads(raw)["choices"][0]["message"]["content"] == "openai:ping"
    assert seen == ["openai"]


def test_a_broken_responder_answers_500(llm_server: ScriptedLLMServer) -> None:
    def responder(body: dict, wire: str) -> Reply:
        raise RuntimeError("boom")

    llm_server.responder = responder
    status, raw = post(llm_server.openai_base_url + "/chat/completions", {"messages": []})
    assert status == 500
    assert "boom" in raw.decode()


def test_default_input_tokens_count_message_text_on_both_wires() -> None:
    openai_body = {
        "messages": [
            {"role": "system", "content": "s" * 40},
            {"role": "user", "content": [{"type": "text", "text": "u" * 40}]},
            {"role": "tool", "tool_call_id": "c", "content": "t" * 20},
        ]
    }
    anthropic_body = {
        "system": "s" * 40,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "u" * 40}]},
            {"role": "user", "content": [{"type": "tool_result", "content": "t" * 20}]},
        ],
    }
    assert request_text_chars(openai_body) == request_text_chars(anthropic_body) == 100
    assert default_input_tokens(openai_body) == 100 // 4 + 10


def test_reset_forgets_requests_script_and_responder(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(Fail(status=500))
    llm_server.responder = lambda body, wire: Reply(text="custom")
    post(llm_server.openai_base_url + "/chat/completions", {"messages": []})
    llm_server.enqueue(Fail(status=500))
    llm_server.reset()
    assert llm_server.requests == [] and llm_server.pending == 0
    _, raw = post(llm_server.openai_base_url + "/chat/completions", {"messages": []})
    assert json.loads(raw)["choices"][0]["message"]["content"] == "ok"


def test_wait_for_requests_times_out_with_a_clear_message(
    llm_server: ScriptedLLMServer,
) -> None:
    with pytest.raises(
        TimeoutError, match=re.escape("Expected 1 LLM requests within 0.05s, got 0")
    ):
        llm_server.wait_for_requests(1, timeout=0.05)


def test_wait_for_requests_wakes_on_arrival(llm_server: ScriptedLLMServer) -> None:
    url = llm_server.openai_base_url + "/chat/completions"
    thread = threading.Thread(target=post, args=(url, {"messages": []}))
    thread.start()
    assert len(llm_server.wait_for_requests(1, timeout=5)) == 1
    thread.join()


def test_stop_cuts_a_hang_short() -> None:
    server = ScriptedLLMServer().start()
    server.enqueue(Hang(30))
    url = server.openai_base_url + "/chat/completions"
    outcome: list[BaseException] = []

    def client() -> None:
        try:
            post(url, {}, 10)
        except OSError as exc:  # the dropped connection
            outcome.append(exc)

    thread = threading.Thread(target=client)
    thread.start()
    server.wait_for_requests(1)
    started = time.monotonic()
    server.stop()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 2
    assert outcome, "the client should see the connection close"


def test_anthropic_wire_rejects_sampling_parameters_like_the_real_api(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.enqueue(Reply(text="kept for the next request"))
    body = {"model": "m", "max_tokens": 5, "temperature": 1.0, "messages": []}
    request = urllib.request.Request(
        llm_server.anthropic_base_url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "anthropic-version": "2026-10-21"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 400
    assert "temperature: Extra inputs are not permitted" in caught.value.read().decode()
    assert llm_server.pending == 1


def test_unknown_path_is_404(llm_server: ScriptedLLMServer) -> None:
    assert post(llm_server.url + "/v1/completions", {})[0] == 404


def test_cli_serves_until_terminated() -> None:
    command = [sys.executable, "-m", "scripted_llm", "--port", "0"]
    with subprocess.Popen(
        [*command, "--responder", "long"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("scripted LLM server listening on http://127.0.0.1:")
            url = line.rsplit(" ", 1)[-1].strip()
            _, raw = post(url + "/v1/chat/completions", {"messages": []})
            assert len(json.loads(raw)["choices"][0]["message"]["content"]) > 1000
        finally:
            process.terminate()
