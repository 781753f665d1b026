"""A compaction of a 100,000-message chat on PostgreSQL (issue 27 item 1).

    DATABASE_URL=postgres://… .venv/bin/python -m bench.compaction_at_scale [--messages 100000] [--write]

Before the write-back went in batches, a compaction of more than 65,535 messages failed on
PostgreSQL (``storage_error``: one bind parameter per id, and the protocol allows 65,535 per
statement). Runs against ``DATABASE_URL`` as it is (migrates it; deletes what it made
afterwards), with the scripted auxiliary model on loopback answering at once, so the figures
are NetaClaw's own: storing the chat, the whole manual compaction (lease, plan, summary
requests, write-back, records), the write-back alone (``compaction_apply`` of every id of a
second chat of the same size) and deleting the compacted chat.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from bench.report import write_section

HEADING = "## Compaction at scale (100,000 messages, PostgreSQL)"
SUMMARY = "## 目标\n修复 src/parser.py\n## 相关文件\n- src/parser.py：解析器\n" + "关键值 42。" * 60


def _rows(messages: int) -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"第 {i} 轮：修改 src/parser.py"}
        for i in range(messages)
    ]


def measure(messages: int) -> dict[str, float | int | str]:
    import django
    from django.core.management import call_command

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaclaw.settings")
    django.setup()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.models import Agent, ChatSession, Message, ModelChannel
    from agents.services import compaction_apply, messages_bulk_append, session_delete
    from compaction.request import CompactionRequest
    from compaction.run import compact
    from scripted_llm import Reply, ScriptedLLMServer

    user = get_user_model().objects.create_user(username=f"bench-scale-{os.getpid()}")
    made: list[object] = [user]
    try:
        with ScriptedLLMServer() as server:
            server.responder = lambda body, wire: Reply(text=SUMMARY)
            channel = ModelChannel.objects.create(
                name=f"bench scale {os.getpid()}",
                provider="openai_compatible",
                base_url=server.openai_base_url,
                api_key="x",
                model="aux-model",
                context_window=200_000,
                is_auxiliary=True,
            )
            made.append(channel)
            agent = Agent.objects.create(
                name=f"bench scale {os.getpid()}",
                model_channel=channel,
                auxiliary_model_channel=channel,
            )
            made.append(agent)
            session = ChatSession.objects.create(owner=user, agent=agent)
            started = time.perf_counter()
            for start in range(0, messages, 10_000):
                batch = _rows(messages)[start : start + 10_000]
                messages_bulk_append(session=session, rows=batch)
            store_seconds = time.perf_counter() - started

            started = time.perf_counter()
            outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
            compact_seconds = time.perf_counter() - started
            requests = len(server.requests)

            second = ChatSession.objects.create(owner=user, agent=agent)
            for start in range(0, messages, 10_000):
                messages_bulk_append(session=second, rows=_rows(messages)[start : start + 10_000])
            ids = list(Message.objects.filter(session=second).values_list("pk", flat=True))
            started = time.perf_counter()
            compaction_apply(
                session=second,
                compacted_ids=ids[1:-1],
                pruned_ids=[],
                summary_content=SUMMARY,
                pruned_token_estimate=0,
                event_content="bench",
                event_payload={},
            )
            apply_seconds = time.perf_counter() - started
            started = time.perf_counter()
            session_delete(session=session)
            delete_seconds = time.perf_counter() - started
        return {
            "vendor": connection.vendor,
            "messages": messages,
            "status": f"{outcome.status} ({outcome.reason})" if outcome.reason else outcome.status,
            "removed": outcome.removed_count,
            "requests": requests,
            "store_seconds": store_seconds,
            "compact_seconds": compact_seconds,
            "apply_ids": len(ids) - 2,
            "apply_seconds": apply_seconds,
            "delete_seconds": delete_seconds,
            "load": os.getloadavg()[0],
        }
    finally:
        for chat in ChatSession.objects.filter(owner=user):
            session_delete(session=chat)
        for row in (made[0], *reversed(made[1:])):  # the user first
            row.delete()  # type: ignore[attr-defined]


def render(result: dict[str, float | int | str], command: str) -> str:
    return (
        "\n".join(
            [
                HEADING,
                "",
                f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
                f"Python {sys.version.split()[0]}; {result['vendor']} on the same machine; the "
                "scripted auxiliary model on loopback answers at once.",
                "",
                "| step | time |",
                "|---|---:|",
                f"| storing {result['messages']:,} messages (batches of 10,000) | "
                f"{result['store_seconds']:.1f} s |",
                f"| the manual compaction (`CompactionService.compact`): {result['status']}, "
                f"{result['removed']:,} messages summarized, {result['requests']} summary requests | "
                f"**{result['compact_seconds']:.1f} s** |",
                f"| its write-back alone (`compaction_apply` of {result['apply_ids']:,} ids, "
                f"batches of 10,000) | {result['apply_seconds']:.1f} s |",
                "| deleting the compacted chat (`session_delete`: its messages in batches, "
                f"summaries last) | {result['delete_seconds']:.1f} s |",
                "",
                f"Load average {result['load']:.1f} when it ended (other work on the machine).",
                "",
                "Before the batches, any compaction of more than 65,535 messages failed here with "
                "`storage_error` (PostgreSQL's limit of 65,535 bind parameters per statement), "
                "and such a chat could not be deleted (Django's deletion collector names every "
                "message in one statement); `tests/service/test_compaction_at_scale.py` holds "
                "both.",
            ]
        )
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("bench.compaction_at_scale needs DATABASE_URL=postgres://…")
        return
    os.environ.pop("REDIS_URL", None)
    result = measure(args.messages)
    command = "DATABASE_URL=postgres://… python -m bench.compaction_at_scale" + (
        " --write" if args.write else ""
    )
    text = render(result, command)
    print(text)
    if args.write:
        write_section(text, HEADING)


if __name__ == "__main__":
    main()
