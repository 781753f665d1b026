"""``context_status``: the token bar's figures, for the agent itself (CONTRACT §7).

The same reading as ``token_update`` (``agents.meter.meter_read``) and the same rule as
automatic compaction (``compaction.trigger.auto_compaction_due``), so what the agent is
told is what the user sees and what the next step will do.
"""

from __future__ import annotations

from typing import Any

from agents.meter import meter_read
from agents.models import ChatSession
from agents.selectors import model_visible
from compaction.trigger import auto_compaction_due


def context_status(session: ChatSession) -> dict[str, Any]:
    reading = meter_read(session=session)
    due = reading.over_threshold and auto_compaction_due(
        session=session, reading=reading, visible_count=model_visible(session=session).count()
    )
    return {
        "usedTokens": reading.used_tokens,
        "thresholdTokens": reading.threshold_tokens,
        "maxTokens": reading.max_tokens,
        "percent": reading.percent,
        "compactionDue": due,
    }
