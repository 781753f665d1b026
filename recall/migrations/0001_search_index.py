"""The search index over stored messages (see ``recall.index``): PostgreSQL full text and
trigrams, SQLite FTS5; built over the messages already stored."""

from django.db import migrations

from recall import index


def forwards(apps, schema_editor):
    index.create(schema_editor)


def backwards(apps, schema_editor):
    index.drop(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("agents", "0004_agent_recall_switch")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
