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
