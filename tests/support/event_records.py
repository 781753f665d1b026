"""Stored event records for tests that show them (``agents.event_records``)."""

from __future__ import annotations

from typing import Any

from agents.event_records import EventRecord
from agents.models import Message
from agents.services import event_record_append


def system_event_append(
    *, session: Any, system_type: str, content: str, payload: dict[str, Any]
) -> Message:
    """A record with ``payload``'s metadata, through the one shape the product writes."""
    record = EventRecord.from_metadata({"systemType": system_type, **payload})
    return event_record_append(session=session, content=content, record=record)
