"""Which models take images (issue 26 item 4): an attached image goes to the model as an
image only when it does; otherwise it stays a file in the workspace, which the agent is
told about like any other.

Per provider: every Claude model from Claude 3 on takes images (Anthropic); OpenAI's GPT-4o,
GPT-4.1, GPT-5 and the o1 / o3 / o4 reasoning models do, GPT-3.5 and GPT-4 (text) do not;
DeepSeek's chat and reasoner models do not; an OpenAI-compatible server (Ollama, vLLM) does
when its model's name says so (llava, "-vl", "vision", gemma3, llama3.2-vision, qwen2.5-vl,
pixtral, minicpm-v)."""

from __future__ import annotations

import re

_OPENAI = re.compile(r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4-turbo|gpt-5|o1|o3|o4)")
_LOCAL = re.compile(r"(llava|[-_.]vl\b|vl[-_:]|vision|gemma3|pixtral|minicpm-v|moondream|bakllava)")


def takes_images(provider: str, model: str) -> bool:
    name = model.lower().rsplit("/", 1)[-1]
    if provider == "anthropic":
        return name.startswith("claude") and not name.startswith("claude-2")
    if provider == "openai":
        return bool(_OPENAI.match(name))
    if provider == "deepseek":
        return False
    return bool(_LOCAL.search(model.lower()))
