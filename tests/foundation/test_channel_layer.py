from __future__ import annotations

import pytest
from django.conf import settings


@pytest.mark.redis
async def test_group_round_trip_on_redis(channel_layer) -> None:
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"].startswith("channels_redis")
    channel = await channel_layer.new_channel()
    await channel_layer.group_add("session.test", channel)
    await channel_layer.group_send("session.test", {"type": "compaction.done", "n": 3})
    assert await channel_layer.receive(channel) == {"type": "compaction.done", "n": 3}


async def test_group_round_trip_on_the_configured_layer(channel_layer) -> None:
    channel = await channel_layer.new_channel()
    await channel_layer.group_add("session.any", channel)
    await channel_layer.group_send("session.any", {"type": "token.update", "percent": 12})
    assert (await channel_layer.receive(channel))["percent"] == 12


@pytest.mark.redis
async def test_a_receive_idle_longer_than_the_blocking_pop_still_gets_its_message(
    channel_layer,
) -> None:
    """An idle socket waits in channels-redis's 5 s blocking pop; with redis-py 8's default
    5 s read timeout that wait raised TimeoutError and closed every idle socket (1011)."""
    import asyncio

    channel = await channel_layer.new_channel()
    receiving = asyncio.ensure_future(channel_layer.receive(channel))
    await asyncio.sleep(channel_layer.brpop_timeout + 2)
    assert not receiving.done(), receiving  # still waiting, not failed
    await channel_layer.send(channel, {"type": "turn.done"})
    assert (await asyncio.wait_for(receiving, 10)) == {"type": "turn.done"}
