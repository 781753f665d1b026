"""Reading and writing entries of the system dictionary by their dotted key."""

from __future__ import annotations

from django.db import transaction

from system.models import DictInfo, DictType

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


def dict_delete(*, type_key: str, name: str) -> None:
    """Remove an entry (nothing happens when there is none)."""
    DictInfo.objects.filter(type__key=type_key, name=name).delete()


def _dict_type(key: str) -> DictType:
    dict_type, _ = DictType.objects.get_or_create(key=key, defaults={"name": key})
    return dict_type


def dict_entry_create(*, type_key: str, name: str, value: str = "", remark: str = "") -> DictInfo:
    """A new entry; its type is created on first use (as ``system.dictionary.dict_set`` does)."""
    with transaction.atomic():
        return DictInfo.objects.create(
            type=_dict_type(type_key), name=name, value=value, remark=remark
        )


def dict_entry_update(
    *,
    entry: DictInfo,
    type_key: str | None = None,
    name: str | None = None,
    value: str | None = None,
    remark: str | None = None,
) -> DictInfo:
    with transaction.atomic():
        if type_key is not None and type_key != entry.type.key:
            entry.type = _dict_type(type_key)
        if name is not None:
            entry.name = name
        if value is not None:
            entry.value = value
        if remark is not None:
            entry.remark = remark
        entry.save()
    return entry
