"""Issue 23: the turn lease and the compaction lease become one session lease.

A compaction takes the session's lease like a turn does (or runs under its turn's), and
``compacting_holder`` says which holder is compacting; the old compaction lease's columns
go. Nothing in flight survives a migration, so no lease is carried over."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("agents", "0008_compaction_preview")]

    operations = [
        migrations.RenameField("chatsession", "turn_lease_holder", "lease_holder"),
        migrations.RenameField("chatsession", "turn_lease_expires_at", "lease_expires_at"),
        migrations.RenameField("chatsession", "turn_stop_holder", "lease_stop_holder"),
        migrations.RenameField("chatsession", "compaction_lease_holder", "compacting_holder"),
        migrations.RemoveField("chatsession", "compaction_lease_expires_at"),
        migrations.AlterField(
            "chatsession", "lease_holder", models.CharField(blank=True, max_length=96)
        ),
        migrations.AlterField(
            "chatsession", "lease_stop_holder", models.CharField(blank=True, max_length=96)
        ),
        migrations.AlterField(
            "chatsession", "compacting_holder", models.CharField(blank=True, max_length=96)
        ),
        migrations.AlterField(
            "chatsession",
            "compaction_cancelled_holder",
            models.CharField(blank=True, max_length=96),
        ),
    ]
