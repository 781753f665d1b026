"""The benchmark's data, made by Django in a subprocess against the bench database:

    python -m bench.ws_load.fixtures CLIENTS MODEL_URL

Migrates, then creates one agent whose model channel points at the scripted model (window
10 M tokens: no compaction) and one user + token + session per client; prints
``{"clients": [[token, session id], …]}`` as JSON on its last line.
"""

from __future__ import annotations

import json
import os
import sys


def main(clients: int, model_url: str) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaclaw.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from agents.models import Agent, ChatSession, ModelChannel

    call_command("migrate", verbosity=0)
    User = get_user_model()
    channel = ModelChannel.objects.create(
        name="bench scripted model",
        provider="openai_compatible",
        base_url=model_url,
        api_key="sk-bench-not-a-secret",
        model="bench-model",
        context_window=10_000_000,
    )
    agent = Agent.objects.create(name="bench", system_prompt="You help.", model_channel=channel)
    users = [User(username=f"ws{i:04d}") for i in range(clients)]
    for user in users:
        user.set_unusable_password()  # hashing 1,000 passwords would dominate the set-up
    users = User.objects.bulk_create(users)
    tokens = Token.objects.bulk_create([Token(user=u, key=Token.generate_key()) for u in users])
    sessions = ChatSession.objects.bulk_create(
        [ChatSession(owner=u, agent=agent, title=f"load {u.username}") for u in users]
    )
    pairs = [[t.key, str(s.pk)] for t, s in zip(tokens, sessions, strict=True)]
    print(json.dumps({"clients": pairs}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
