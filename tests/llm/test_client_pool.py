"""Async SDK clients are kept per event loop and channel: calls reuse connections."""

from __future__ import annotations

import asyncio

import pytest

from llm import get_provider
from llm.transport import AsyncClientPool
from scripted_llm import Reply, ScriptedLLMServer
from tests.support.adapters import ALL_PROVIDERS, events_of, make_config


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_calls_on_one_loop_share_a_connection(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    config = make_config(llm_server, provider)
    for text in ("one", "two", "three"):
        llm_server.enqueue(Reply(text=text))
        await events_of(get_provider(config))
    ports = {request.client_port for request in llm_server.requests}
    assert len(llm_server.requests) == 3
    assert len(ports) == 1, f"each call opened its own connection: {ports}"


def test_each_loop_gets_its_own_client(llm_server: ScriptedLLMServer) -> None:
    """A pool bound to a finished loop must never serve another (it would hang or fail)."""
    config = make_config(llm_server, "openai")
    for text in ("first loop", "second loop"):
        llm_server.enqueue(Reply(text=text))
        asyncio.run(events_of(get_provider(config)))
    assert len({request.client_port for request in llm_server.requests}) == 2


def test_a_changed_key_gets_a_new_client(llm_server: ScriptedLLMServer) -> None:
    async def both() -> None:
        for key in ("key-one", "key-two"):
            llm_server.enqueue(Reply(text="ok"))
            await events_of(get_provider(make_config(llm_server, "openai", api_key=key)))

    asyncio.run(both())
    keys = [request.headers["authorization"] for request in llm_server.requests]
    assert keys == ["Bearer key-one", "Bearer key-two"]
    assert len({request.client_port for request in llm_server.requests}) == 2


class _FakeClient:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.loop: asyncio.AbstractEventLoop | None = None

    async def close(self) -> None:
        self.closed = True


def _recording_pool(**limits: int) -> tuple[AsyncClientPool[_FakeClient], list[_FakeClient]]:
    """A pool of fake clients, and every client it made, in order."""
    made: list[_FakeClient] = []

    def make(config):  # type: ignore[no-untyped-def]
        made.append(_FakeClient(config.api_key))
        return made[-1]

    return AsyncClientPool(make, **limits), made


async def test_the_idle_oldest_is_closed_beyond_the_limit(llm_server: ScriptedLLMServer) -> None:
    pool, made_in_order = _recording_pool(per_loop=2)
    configs = [make_config(llm_server, "openai", api_key=f"k{i}") for i in range(3)]
    async with pool.client(configs[0]):
        pass
    async with pool.client(configs[1]):
        pass
    async with pool.client(configs[0]):  # k0 is now the most recently used
        pass
    async with pool.client(configs[2]) as third:
        assert third is made_in_order[2]
    made = {client.name: client for client in made_in_order}
    assert made["k1"].closed and not made["k0"].closed and not made["k2"].closed
    assert pool.kept() == 2


async def test_a_client_in_use_is_closed_only_when_its_call_ends(
    llm_server: ScriptedLLMServer,
) -> None:
    pool, _made = _recording_pool(per_loop=1)
    first, second = (make_config(llm_server, "openai", api_key=k) for k in ("a", "b"))
    async with pool.client(first) as in_flight:
        async with pool.client(second):
            assert not in_flight.closed  # evicted, but a call is still streaming on it
        assert not in_flight.closed
    assert in_flight.closed
    assert pool.kept() == 1


async def test_calls_beyond_the_per_client_limit_spread_over_more_clients(
    llm_server: ScriptedLLMServer,
) -> None:
    pool, made = _recording_pool(calls_per_client=2)
    config = make_config(llm_server, "openai")
    async with pool.client(config) as a, pool.client(config) as b, pool.client(config) as c:
        assert a is b and c is not a  # two calls share a client; the third gets another
    async with pool.client(config) as d:
        assert d in (a, c)  # idle clients are reused, not remade
    assert pool.clients(config) == 2 and not any(client.closed for client in made)


def test_the_clients_of_ended_loops_are_let_go(llm_server: ScriptedLLMServer) -> None:
    """``asyncio.run`` per call (commands, ``async_to_sync``) must not keep a client and its
    connections per call for the life of the process."""
    made: list[_FakeClient] = []

    def make(config):  # type: ignore[no-untyped-def]
        made.append(_FakeClient(config.api_key))
        made[-1].loop = asyncio.get_running_loop()  # as a real client's connections do
        return made[-1]

    pool: AsyncClientPool[_FakeClient] = AsyncClientPool(make)
    config = make_config(llm_server, "openai")

    async def one_call() -> None:
        async with pool.client(config):
            pass

    for _ in range(20):
        asyncio.run(one_call())
    assert len(made) == 20  # one per loop: a pool never serves another loop
    assert pool.loops() == 1  # only the last loop's, dropped on the next call from any loop
    assert all(client.closed for client in made)  # each closed as its loop shut down


def test_a_loop_closed_bare_leaves_its_clients_alone(llm_server: ScriptedLLMServer) -> None:
    """Without ``shutdown_asyncgens`` there is no running loop to close them on: dropped."""
    pool, made = _recording_pool()
    config = make_config(llm_server, "openai")

    async def one_call() -> None:
        async with pool.client(config):
            pass

    loop = asyncio.new_event_loop()
    loop.run_until_complete(one_call())
    loop.close()
    asyncio.run(one_call())
    assert [client.closed for client in made] == [False, True]
    assert pool.loops() == 1  # the bare-closed loop's clients were let go


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
def test_real_clients_are_closed_with_their_loop(
    llm_server: ScriptedLLMServer, provider: str, recwarn: pytest.WarningsRecorder
) -> None:
    """The SDKs' aiohttp transport warns about every session collected unclosed."""
    import gc

    config = make_config(llm_server, provider)
    for text in ("first loop", "second loop"):
        llm_server.enqueue(Reply(text=text))
        asyncio.run(events_of(get_provider(config)))
    gc.collect()
    assert not [w for w in recwarn.list if issubclass(w.category, ResourceWarning)]
