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


# --- the in-memory layer of the zero-setup default (channels_app/layers.py) ----------------


def _memory_layer(**config):
    from channels_app.layers import InMemoryChannelLayer

    return InMemoryChannelLayer(**config)


def test_the_zero_setup_layer_is_ours_and_sized() -> None:
    from netaclaw import settings as product

    if product.REDIS_URL:
        pytest.skip("REDIS_URL is set: the product runs on Redis")
    layer = product.CHANNEL_LAYERS["default"]
    assert layer["BACKEND"] == "channels_app.layers.InMemoryChannelLayer"
    assert layer["CONFIG"]["capacity"] >= 10_000


async def test_a_full_socket_queue_makes_the_publisher_wait_instead_of_dropping() -> None:
    """Channels' in-memory layer drops what does not fit, silently (issue 14: 175 of 300
    turn_done arrived)."""
    import asyncio

    layer = _memory_layer(capacity=3, send_timeout=5)
    channel = await layer.new_channel()
    await layer.group_add("session.burst", channel)

    async def publish() -> None:
        for i in range(40):
            await layer.group_send("session.burst", {"type": "x.y", "i": i})

    async def read_slowly() -> list[int]:
        got = []
        for _ in range(40):
            await asyncio.sleep(0.001)
            got.append((await layer.receive(channel))["i"])
        return got

    _, got = await asyncio.wait_for(asyncio.gather(publish(), read_slowly()), 10)
    assert got == list(range(40))


async def test_a_socket_that_reads_nothing_loses_events_loudly_and_alone(caplog) -> None:
    layer = _memory_layer(capacity=2, send_timeout=0.2)
    stuck, live = await layer.new_channel(), await layer.new_channel()
    for channel in (stuck, live):
        await layer.group_add("session.stuck", channel)
    for i in range(3):
        await layer.group_send(
            "session.stuck", {"type": "session.event", "event_type": "turn_done"}
        )
        if i:
            assert (await layer.receive(live))["event_type"] == "turn_done"
    assert (await layer.receive(live))["event_type"] == "turn_done"
    dropped = [r for r in caplog.records if r.name == "channels_app.layers"]
    assert len(dropped) == 1 and "turn_done" in dropped[0].getMessage()
    assert dropped[0].levelname == "ERROR"
