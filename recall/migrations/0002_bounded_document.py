"""PostgreSQL: the search document is kept by a trigger and bounded to what a tsvector holds
(``recall.index.PG_BOUNDED_FORWARDS``): a message of about 1 MB of distinct words failed its
INSERT. The stored documents stay as they are (``DROP EXPRESSION`` rewrites nothing)."""

from django.db import migrations

from recall import index


def forwards(apps, schema_editor):
    index.bound_documents(schema_editor)


def backwards(apps, schema_editor):
    index.unbound_documents(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("recall", "0001_search_index")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
