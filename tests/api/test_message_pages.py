"""``GET /api/sessions/<id>/messages/`` is paged by a cursor (CONTRACT §4; issue 14, item 9).

It returned the whole history: 71 MB and +420 MB of server memory for three concurrent calls
at 100,000 messages. Now ``?limit=N&before=<message id>`` answers ``{"results": [...oldest
first...], "next": url|null}``, ``next`` fetching the page before; the default and the
maximum limit are in the OpenAPI schema; the whole history is ``export_session``'s job.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from agents import services
from agents.message_format import message_to_json
from agents.models import Role
from agents.selectors import history_load
from tests.factories import make_session
from web.api import MESSAGES_DEFAULT_LIMIT, MESSAGES_MAX_LIMIT, MESSAGES_PAGE_CHARS


def _url(session, **query) -> str:
    q = "&".join(f"{k}={v}" for k, v in query.items())
    return f"/api/sessions/{session.pk}/messages/" + (f"?{q}" if q else "")


def _walk(api, url: str) -> tuple[list[list[dict]], list[str | None]]:
    """Every page from ``url`` on, following ``next``: the pages newest first."""
    pages, links = [], []
    while url:
        response = api.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"results", "next"}
        pages.append(body["results"])
        links.append(body["next"])
        url = body["next"]
    return pages, links


def _session_with_compaction(owner, n: int):
    """``n`` messages, the middle third compacted into a summary (which shares its first
    replaced message's position and sorts before it)."""
    session = make_session(owner=owner)
    rows = [
        {"role": Role.USER if i % 2 == 0 else Role.ASSISTANT, "content": f"turn {i}"}
        for i in range(n)
    ]
    msgs = services.messages_bulk_append(session=session, rows=rows)
    services.compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in msgs[n // 3 : 2 * n // 3]],
        pruned_ids=[],
        summary_content="[CONTEXT COMPACTION] the middle",
        pruned_token_estimate=0,
        event_content="Compacted",
        event_payload={"removedCount": n // 3},
    )
    return session


@pytest.mark.parametrize("view", ["compacted", "full"])
def test_walking_next_gives_the_whole_history_once_in_order(alice, alice_api, view) -> None:
    session = _session_with_compaction(alice, 250)
    pages, links = _walk(alice_api, _url(session, view=view, limit=40))
    expected = [message_to_json(m, view=view) for m in history_load(session=session, view=view)]
    assert [m for page in reversed(pages) for m in page] == expected
    assert all(len(page) == 40 for page in pages[:-1]) and 0 < len(pages[-1]) <= 40
    assert links[-1] is None and all(links[:-1])
    first = parse_qs(urlparse(links[0]).query)
    assert first == {"view": [view], "limit": ["40"], "before": [str(pages[0][0]["id"])]}
    assert links[0].startswith("http://testserver/api/sessions/")


def test_the_default_page_is_the_newest_and_the_limit_is_capped(alice, alice_api) -> None:
    session = make_session(owner=alice)
    rows = [{"role": Role.USER, "content": f"m{i}"} for i in range(MESSAGES_MAX_LIMIT + 30)]
    services.messages_bulk_append(session=session, rows=rows)
    newest = alice_api.get(_url(session)).json()
    assert len(newest["results"]) == MESSAGES_DEFAULT_LIMIT
    assert newest["results"][-1]["content"] == f"m{MESSAGES_MAX_LIMIT + 29}"
    capped = alice_api.get(_url(session, limit=100_000)).json()
    assert len(capped["results"]) == MESSAGES_MAX_LIMIT
    assert capped["results"][0]["content"] == "m30"
    assert f"limit={MESSAGES_MAX_LIMIT}" in capped["next"]


def test_messages_appended_meanwhile_never_shift_a_page(alice, alice_api) -> None:
    session = make_session(owner=alice)
    services.messages_bulk_append(
        session=session, rows=[{"role": Role.USER, "content": f"m{i}"} for i in range(30)]
    )
    first = alice_api.get(_url(session, limit=10)).json()
    for i in range(5):
        services.message_append(session=session, role=Role.ASSISTANT, content=f"late {i}")
    second = alice_api.get(first["next"]).json()
    assert [m["content"] for m in second["results"]] == [f"m{i}" for i in range(10, 20)]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("limit=0", "bad_limit"),
        ("limit=-3", "bad_limit"),
        ("limit=ten", "bad_limit"),
        ("limit=٣", "bad_limit"),
        ("before=abc", "bad_before"),
        ("before=" + "9" * 5000, "bad_before"),
        ("view=everything", "bad_view"),
    ],
)
def test_bad_parameters_are_400_with_a_reason(alice, alice_api, query, reason) -> None:
    session = make_session(owner=alice)
    response = alice_api.get(f"/api/sessions/{session.pk}/messages/?{query}")
    assert response.status_code == 400
    body = response.json()
    assert body["reason"] == reason and body["error"]


def test_a_cursor_from_another_session_is_404(alice, alice_api) -> None:
    mine, other = make_session(owner=alice), make_session(owner=alice)
    foreign = services.message_append(session=other, role=Role.USER, content="elsewhere")
    assert alice_api.get(_url(mine, before=foreign.pk)).status_code == 404
    assert alice_api.get(_url(mine, before=10**17)).status_code == 404


def test_the_schema_states_the_default_and_the_maximum_limit(alice_api) -> None:
    schema = alice_api.get("/api/schema/?format=json").json()
    get = schema["paths"]["/api/sessions/{session_id}/messages/"]["get"]
    params = {p["name"]: p for p in get["parameters"]}
    assert params["limit"]["schema"]["default"] == MESSAGES_DEFAULT_LIMIT
    assert params["limit"]["schema"]["maximum"] == MESSAGES_MAX_LIMIT
    assert params["limit"]["schema"]["minimum"] == 1
    assert params["before"]["schema"]["type"] == "integer"
    assert params["view"]["schema"]["enum"] == ["compacted", "full"]
    page = get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    properties = schema["components"]["schemas"][page.rsplit("/", 1)[1]]["properties"]
    assert set(properties) == {"results", "next"}


def test_one_whole_message_by_id_for_its_owner_only(alice, alice_api, bob_api) -> None:
    session = make_session(owner=alice)
    big = services.message_append(session=session, role=Role.ASSISTANT, content="x" * 300_000)
    url = f"/api/sessions/{session.pk}/messages/{big.pk}/"
    body = alice_api.get(url).json()
    assert body == message_to_json(big, view="compacted")
    assert bob_api.get(url).status_code == 404
    assert alice_api.get(f"/api/sessions/{session.pk}/messages/{big.pk + 999}/").status_code == 404


def test_a_page_of_huge_messages_stops_at_its_character_budget(alice, alice_api) -> None:
    """500 tool outputs of a megabyte each must not become one 500 MB response."""
    session = make_session(owner=alice)
    rows = [{"role": Role.USER, "content": f"{i:02d}" + "x" * 299_998} for i in range(12)]
    rows.insert(3, {"role": Role.USER, "content": "h" * (MESSAGES_PAGE_CHARS + 10)})
    services.messages_bulk_append(session=session, rows=rows)
    pages, _ = _walk(alice_api, _url(session, limit=MESSAGES_MAX_LIMIT))
    assert [len(p) for p in pages] == [6, 3, 1, 3]  # 6 × 300k fit 2M; the huge one alone
    walked = [m["content"] for page in reversed(pages) for m in page]
    assert walked == [r["content"] for r in rows]
