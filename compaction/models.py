"""What compaction keeps between processes (issue 24 item 5)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.models import ChatSession


class PreparedCompaction(models.Model):
    """The background head start (``compaction.background``): the next automatic
    compaction's summary, written from the soft threshold while the chat goes on, kept
    where every process sees it — the turn that crosses the threshold applies it in
    whichever process runs it. One per session."""

    class Status(models.TextChoices):
        PREPARING = "preparing", _("preparing")
        READY = "ready", _("ready")

    session = models.OneToOneField(
        ChatSession,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="prepared_compaction",
    )
    status = models.CharField(max_length=16, choices=Status.choices)
    # the session's compaction count when it was asked for: a compaction since makes it stale
    compaction_count = models.PositiveIntegerField()
    instructions = models.TextField(blank=True)
    fingerprint = models.JSONField(default=list)  # ``context.history_fingerprint``
    result = models.JSONField(default=dict)  # ``compaction.result_json``
    notes = models.TextField(blank=True)
    started_at = models.DateTimeField()
    ready_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("prepared compaction")
        verbose_name_plural = _("prepared compactions")

    def __str__(self) -> str:
        return f"{self.session_id} ({self.status})"
