"""A server's memory stays flat under repeated large page reads (issue 14, item 9), on a real
Daphne process (its start-up heap frozen, young collections every 10,000 allocations).

Before: the endpoint returned the whole history, and a sent response stayed reachable from
reference cycles (Django's ASGI handler, DRF) until a full collection, which such a process
runs rarely: one process grew from 415 MiB to 1.4 GiB on fifteen reads of a 100,000-message
history. Now a page is bounded (500 messages, 2,000,000 characters) and the history reads
run a full collection every few pages' worth of text.
"""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest
from rest_framework.authtoken.models import Token

from agents.models import Role
from agents.services import messages_bulk_append
from tests.factories import make_session, make_user
from tests.support.daphne import running_daphne

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TEXT = "这是一条很长的工具输出，关于 src/parser.py 的修改。" * 800  # ~20,000 characters


def test_repeated_reads_of_the_largest_pages_keep_a_server_flat(tmp_path) -> None:
    user = make_user()
    token = Token.objects.create(user=user).key
    session = make_session(owner=user)
    rows = [
        {"role": Role.TOOL, "content": f"{i} {TEXT}", "tool_call_id": f"c{i}"} for i in range(400)
    ]
    messages_bulk_append(session=session, rows=rows)
    with running_daphne(tmp_path / "var") as server:
        url = f"{server.http_url}/api/sessions/{session.pk}/messages/?limit=500&view=full"
        sizes: list[int] = []

        def read() -> None:
            request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})
            with urllib.request.urlopen(request, timeout=60) as response:
                body = response.read()
            sizes.append(len(body))
            assert json.loads(body)["next"]

        def rounds(n: int) -> list[int]:
            seen = []
            for _ in range(n):
                readers = [threading.Thread(target=read) for _ in range(3)]
                for r in readers:
                    r.start()
                for r in readers:
                    r.join()
                seen.append(server.rss_mib())
            return seen

        warm = rounds(10)[-1]
        after = rounds(60)
    assert len(sizes) == 210 and min(sizes) > 3_000_000  # 4 MB pages, 840 MB served
    # without the collections: a sawtooth up to +380..+510 MiB
    assert max(after) - warm < 150, (warm, after)
