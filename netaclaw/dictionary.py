"""Reading and writing entries of the system dictionary by their dotted key."""

from __future__ import annotations

from netaclaw.models import DictInfo, DictType

NETACLAW_TYPE_KEY = "netaclaw"
DEFAULT_AUXILIARY_CHANNEL = "default_auxiliary_channel_id"


def dict_value(*, type_key: str, name: str) -> str | None:
    entry = DictInfo.objects.filter(type__key=type_key, name=name).only("value").first()
    return entry.value if entry is not None else None


def dict_set(*, type_key: str, name: str, value: str) -> DictInfo:
    dict_type, _ = DictType.objects.get_or_create(key=type_key, defaults={"name": type_key})
    entry, _ = DictInfo.objects.update_or_create(
        type=dict_type, name=name, defaults={"value": value}
    )
    return entry
