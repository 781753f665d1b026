"""First-run set-up for `make run`: a local admin, a demo agent, channels from env keys.

Idempotent: running it again changes nothing that already exists. The admin's
password is generated once, printed, and kept in an untracked file (mode 600)
so the console can show it again — never a fixed default password.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from agents.models import Agent, ModelChannel, Provider
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set, dict_value

ADMIN_USERNAME = "admin"
# One name for every language of the page (issue 16 item 9: a Chinese name in the English
# UI); the demo agent of an earlier install, made with the old name, is renamed once.
DEMO_AGENT_NAME = "NetaClaw Demo"
LEGACY_DEMO_AGENT_NAME = "NetaClaw 演示助手"
DEMO_SYSTEM_PROMPT = (
    "You are NetaClaw's demo agent, a careful software assistant. You can read and write "
    "files in this chat's workspace and keep a todo list. Answer in the user's language."
)

# provider, env var with the key, env var with the model, default model, default base_url
_ENV_CHANNELS: tuple[tuple[str, str, str, str], ...] = (
    (Provider.ANTHROPIC, "ANTHROPIC_API_KEY", "NETACLAW_ANTHROPIC_MODEL", "claude-sonnet-4-5"),
    (Provider.OPENAI, "OPENAI_API_KEY", "NETACLAW_OPENAI_MODEL", "gpt-4o-mini"),
    (Provider.DEEPSEEK, "DEEPSEEK_API_KEY", "NETACLAW_DEEPSEEK_MODEL", "deepseek-chat"),
)


@dataclass
class BootstrapReport:
    username: str
    password: str | None
    password_file: Path
    created_admin: bool
    demo_agent: Agent
    channels_created: list[ModelChannel] = field(default_factory=list)
    has_channel: bool = False


def credentials_path() -> Path:
    return Path(settings.VAR_DIR) / "admin-credentials.txt"


def _read_saved_password(path: Path) -> str | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("password="):
                return line.partition("=")[2]
    except FileNotFoundError:
        return None
    return None


def _ensure_admin() -> tuple[str | None, bool]:
    User = get_user_model()
    path = credentials_path()
    user = User.objects.filter(username=ADMIN_USERNAME).first()
    if user is not None:
        return _read_saved_password(path), False
    password = secrets.token_urlsafe(12)
    User.objects.create_superuser(username=ADMIN_USERNAME, email="", password=password)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"username={ADMIN_USERNAME}\npassword={password}\n")
    path.chmod(0o600)
    return password, True


def _channels_from_env() -> list[ModelChannel]:
    created: list[ModelChannel] = []
    for provider, key_var, model_var, default_model in _ENV_CHANNELS:
        key = os.environ.get(key_var, "").strip()
        if not key or ModelChannel.objects.filter(provider=provider).exists():
            continue
        created.append(
            ModelChannel.objects.create(
                name=f"{provider} (from {key_var})",
                provider=provider,
                api_key=key,
                model=os.environ.get(model_var) or default_model,
                is_auxiliary=True,
            )
        )
    base_url = os.environ.get("NETACLAW_OPENAI_COMPATIBLE_BASE_URL", "").strip()
    model = os.environ.get("NETACLAW_OPENAI_COMPATIBLE_MODEL", "").strip()
    if (
        base_url
        and model
        and not ModelChannel.objects.filter(provider=Provider.OPENAI_COMPATIBLE, base_url=base_url)
    ):
        created.append(
            ModelChannel.objects.create(
                name=f"local ({model})",
                provider=Provider.OPENAI_COMPATIBLE,
                base_url=base_url,
                api_key=os.environ.get("NETACLAW_OPENAI_COMPATIBLE_API_KEY", ""),
                model=model,
                is_auxiliary=True,
            )
        )
    return created


@transaction.atomic
def bootstrap() -> BootstrapReport:
    password, created_admin = _ensure_admin()
    created = _channels_from_env()
    first_channel = ModelChannel.objects.filter(enabled=True).order_by("id").first()
    agent = Agent.objects.filter(name=DEMO_AGENT_NAME).first()
    if agent is None:
        agent = Agent.objects.filter(name=LEGACY_DEMO_AGENT_NAME).first()
        if agent is not None:
            agent.name = DEMO_AGENT_NAME
            agent.save(update_fields=["name", "updated_at"])
    if agent is None:
        agent = Agent.objects.create(
            name=DEMO_AGENT_NAME, system_prompt=DEMO_SYSTEM_PROMPT, model_channel=first_channel
        )
    elif agent.model_channel is None and first_channel is not None:
        agent.model_channel = first_channel
        agent.save(update_fields=["model_channel", "updated_at"])
    auxiliary = ModelChannel.objects.filter(enabled=True, is_auxiliary=True).order_by("id").first()
    if auxiliary and not dict_value(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL):
        dict_set(
            type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(auxiliary.pk)
        )
    return BootstrapReport(
        username=ADMIN_USERNAME,
        password=password,
        password_file=credentials_path(),
        created_admin=created_admin,
        demo_agent=agent,
        channels_created=created,
        has_channel=first_channel is not None,
    )


CHANNEL_HELP = """\
No model channel is configured yet, so the agent cannot answer. Add one either way:
  * in the browser: Model channels → Add a model channel (provider anthropic / openai /
    deepseek, or openai_compatible with a base URL such as http://127.0.0.1:11434/v1 for
    Ollama or http://127.0.0.1:8000/v1 for vLLM); tick "usable as auxiliary model" (the
    first channel so marked becomes the default auxiliary model, so /compact works), save,
    press "Test connection", then pick the channel on the agent's page (Agents → Edit);
  * or restart with a key in the environment: ANTHROPIC_API_KEY, OPENAI_API_KEY or
    DEEPSEEK_API_KEY, or NETACLAW_OPENAI_COMPATIBLE_BASE_URL + NETACLAW_OPENAI_COMPATIBLE_MODEL.
"""
