from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("agents", "0009_one_session_lease")]

    operations = [
        migrations.CreateModel(
            name="PreparedCompaction",
            fields=[
                (
                    "session",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="prepared_compaction",
                        serialize=False,
                        to="agents.chatsession",
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[("preparing", "preparing"), ("ready", "ready")], max_length=16
                    ),
                ),
                ("compaction_count", models.PositiveIntegerField()),
                ("instructions", models.TextField(blank=True)),
                ("fingerprint", models.JSONField(default=list)),
                ("result", models.JSONField(default=dict)),
                ("notes", models.TextField(blank=True)),
                ("started_at", models.DateTimeField()),
                ("ready_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "verbose_name": "prepared compaction",
                "verbose_name_plural": "prepared compactions",
            },
        ),
    ]
