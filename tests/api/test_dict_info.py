"""The system dictionary over REST: staff only; the default auxiliary channel is checked."""

from __future__ import annotations

import pytest

from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set, dict_value
from system.models import DictInfo
from tests.factories import make_channel

pytestmark = pytest.mark.django_db

DEFAULT_AUX = {"type": NETACLAW_TYPE_KEY, "name": DEFAULT_AUXILIARY_CHANNEL}


def test_non_staff_get_403(alice_api) -> None:
    entry = dict_set(type_key="netaclaw", name="x", value="1")
    assert alice_api.get("/api/dict-info/").status_code == 403
    assert alice_api.get(f"/api/dict-info/{entry.pk}/").status_code == 403
    assert alice_api.post("/api/dict-info/", {}, format="json").status_code == 403
    assert alice_api.patch(f"/api/dict-info/{entry.pk}/", {}, format="json").status_code == 403


def test_staff_sets_the_default_auxiliary_channel(staff_api) -> None:
    aux = make_channel(is_auxiliary=True)
    response = staff_api.post(
        "/api/dict-info/", {**DEFAULT_AUX, "value": str(aux.pk)}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json() == {
        "id": response.json()["id"],
        "type": "netaclaw",
        "name": "default_auxiliary_channel_id",
        "value": str(aux.pk),
        "remark": "",
    }
    assert dict_value(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL) == str(aux.pk)
    listed = staff_api.get("/api/dict-info/").json()
    assert [e["name"] for e in listed] == ["default_auxiliary_channel_id"]


@pytest.mark.parametrize("value", ["999999", "abc", ""])
def test_default_auxiliary_channel_must_exist(staff_api, value) -> None:
    response = staff_api.post("/api/dict-info/", {**DEFAULT_AUX, "value": value}, format="json")
    assert response.status_code == 400
    assert response.json() == {"value": [f"{value!r} is not the id of a model channel."]}
    assert not DictInfo.objects.exists()


def test_default_auxiliary_channel_must_be_marked_auxiliary(staff_api) -> None:
    plain = make_channel(is_auxiliary=False)
    response = staff_api.post(
        "/api/dict-info/", {**DEFAULT_AUX, "value": str(plain.pk)}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "value": [f"Channel {plain.pk} is not marked usable as auxiliary model."]
    }


def test_patch_is_validated_too(staff_api) -> None:
    aux = make_channel(is_auxiliary=True)
    entry = dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(aux.pk))
    response = staff_api.patch(f"/api/dict-info/{entry.pk}/", {"value": "424242"}, format="json")
    assert response.status_code == 400
    entry.refresh_from_db()
    assert entry.value == str(aux.pk)
    other = make_channel(is_auxiliary=True)
    response = staff_api.patch(
        f"/api/dict-info/{entry.pk}/", {"value": str(other.pk), "remark": "bigger"}, format="json"
    )
    assert response.status_code == 200
    entry.refresh_from_db()
    assert (entry.value, entry.remark) == (str(other.pk), "bigger")


def test_other_entries_are_free_text_and_names_are_unique_per_type(staff_api) -> None:
    body = {"type": "ui", "name": "banner", "value": "hello"}
    assert staff_api.post("/api/dict-info/", body, format="json").status_code == 201
    response = staff_api.post("/api/dict-info/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"name": ["An entry named banner already exists."]}
    other_type = {**body, "type": "ui2"}
    assert staff_api.post("/api/dict-info/", other_type, format="json").status_code == 201


def test_required_fields(staff_api) -> None:
    response = staff_api.post("/api/dict-info/", {}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "type": ["This field is required."],
        "name": ["This field is required."],
    }


def test_unknown_entry_is_404(staff_api) -> None:
    assert staff_api.get("/api/dict-info/999999/").status_code == 404
