"""What a chat has used, for the people who pay for it (issue 25 item 8; CONTRACT §8).

Chat: the provider-reported tokens of every model call of the chat's turns, summed on the
session row as they come (``services.session_record_usage``). Compaction: the auxiliary
model's tokens and requests, on each compaction's audit record — every ending counts (a
failed summary was still billed). A cost is given where the channel that was used has
prices: the chat at its agent's model channel's, compactions at the auxiliary channel
each record names."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet, Sum
from django.db.models.functions import Coalesce

from agents.models import ChatSession, CompactionRecord, ModelChannel

MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Usage:
    chat_input: int = 0
    chat_output: int = 0
    api_calls: int = 0
    compaction_input: int = 0
    compaction_output: int = 0
    compaction_requests: int = 0
    cost: Decimal | None = None  # None: no channel used has prices

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost, other.cost) if c is not None]
        return Usage(
            self.chat_input + other.chat_input,
            self.chat_output + other.chat_output,
            self.api_calls + other.api_calls,
            self.compaction_input + other.compaction_input,
            self.compaction_output + other.compaction_output,
            self.compaction_requests + other.compaction_requests,
            sum(costs, Decimal(0)) if costs else None,
        )

    def to_json(self) -> dict[str, Any]:
        """CONTRACT §8's shape (``cost`` is added where prices are known)."""
        data: dict[str, Any] = {
            "chat": {
                "inputTokens": self.chat_input,
                "outputTokens": self.chat_output,
                "apiCalls": self.api_calls,
            },
            "compaction": {
                "inputTokens": self.compaction_input,
                "outputTokens": self.compaction_output,
                "requests": self.compaction_requests,
            },
            "total": {
                "inputTokens": self.chat_input + self.compaction_input,
                "outputTokens": self.chat_output + self.compaction_output,
            },
        }
        if self.cost is not None:
            data["total"]["cost"] = str(self.cost.quantize(Decimal("0.0001")))
        return data


def _price(channel: ModelChannel | None, tokens_in: int, tokens_out: int) -> Decimal | None:
    if channel is None or channel.input_price_per_million is None:
        return None
    out_price = channel.output_price_per_million or Decimal(0)
    return (tokens_in * channel.input_price_per_million + tokens_out * out_price) / MILLION


def _usage(sessions: QuerySet[ChatSession], records: QuerySet[CompactionRecord]) -> Usage:
    """Two aggregate queries (and the prices of the channels they name): chats by their
    model channel, compaction records by the auxiliary channel they used."""
    total = Usage()
    # a chat's own model (issue 26 item 3) over its agent's: all its tokens at today's
    chats = (
        sessions.annotate(chat_channel=Coalesce("model_channel", "agent__model_channel"))
        .values("chat_channel")
        .annotate(
            tokens_in=Sum("total_input_tokens"),
            tokens_out=Sum("total_output_tokens"),
            calls=Sum("api_calls"),
        )
    )
    aux = records.values("auxiliary_channel").annotate(
        tokens_in=Sum("aux_input_tokens"),
        tokens_out=Sum("aux_output_tokens"),
        requests=Sum("request_count"),
    )
    chat_rows, aux_rows = list(chats), list(aux)
    by_id = ModelChannel.objects.in_bulk(
        [r["chat_channel"] for r in chat_rows if r["chat_channel"]]
    )
    by_name = {
        c.name: c
        for c in ModelChannel.objects.filter(name__in=[r["auxiliary_channel"] for r in aux_rows])
    }
    for row in chat_rows:
        tokens_in, tokens_out = row["tokens_in"] or 0, row["tokens_out"] or 0
        channel = by_id.get(row["chat_channel"])
        total = total + Usage(
            tokens_in, tokens_out, row["calls"] or 0, cost=_price(channel, tokens_in, tokens_out)
        )
    for row in aux_rows:
        tokens_in, tokens_out = row["tokens_in"] or 0, row["tokens_out"] or 0
        channel = by_name.get(row["auxiliary_channel"])
        total = total + Usage(
            compaction_input=tokens_in,
            compaction_output=tokens_out,
            compaction_requests=row["requests"] or 0,
            cost=_price(channel, tokens_in, tokens_out),
        )
    return total


def session_usage(*, session: ChatSession) -> Usage:
    """One chat's usage."""
    return _usage(
        ChatSession.objects.filter(pk=session.pk), CompactionRecord.objects.filter(session=session)
    )


def user_usage(*, owner: Any) -> Usage:
    """The same totals over every chat of ``owner``."""
    return _usage(
        ChatSession.objects.filter(owner=owner),
        CompactionRecord.objects.filter(session__owner=owner),
    )
