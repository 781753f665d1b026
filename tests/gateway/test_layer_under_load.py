"""The configured channel layer under a few hundred sockets' worth of traffic (found by
``bench.ws_load``): nothing fails and nothing is dropped."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.redis


async def test_hundreds_of_layer_calls_in_flight_do_not_exhaust_the_pool(channel_layer) -> None:
    """redis-py 8 caps a pool at 100 connections and then raises MaxConnectionsError; every
    consumer joining its group at the same moment closed with 1011."""
    channels = [await channel_layer.new_channel() for _ in range(300)]
    await asyncio.gather(
        *(channel_layer.group_add(f"load.g{i}", c) for i, c in enumerate(channels))
    )
    await asyncio.gather(
        *(channel_layer.group_send(f"load.g{i}", {"type": "x.y", "i": i}) for i in range(300))
    )
    got = await asyncio.wait_for(
        asyncio.gather(*(channel_layer.receive(c) for c in channels)), timeout=30
    )
    assert sorted(m["i"] for m in got) == list(range(300))


async def test_a_backlog_past_a_thousand_messages_loses_none(channel_layer) -> None:
    """All consumers of a process share one Redis list; at capacity 1000 group_send dropped
    the rest silently (turns never got their turn_done)."""
    channel = await channel_layer.new_channel()
    await channel_layer.group_add("load.backlog", channel)
    for i in range(1500):
        await channel_layer.group_send("load.backlog", {"type": "x.y", "i": i})
    got = [(await asyncio.wait_for(channel_layer.receive(channel), 10))["i"] for _ in range(1500)]
    assert got == list(range(1500))
