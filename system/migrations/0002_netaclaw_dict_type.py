"""Seed §5.4: the dictionary type that holds NetaClaw's system settings."""

from __future__ import annotations

from django.db import migrations


def create_type(apps, schema_editor):
    DictType = apps.get_model("netaclaw", "DictType")
    DictType.objects.get_or_create(key="netaclaw", defaults={"name": "NetaClaw配置"})


def remove_type(apps, schema_editor):
    apps.get_model("netaclaw", "DictType").objects.filter(key="netaclaw").delete()


class Migration(migrations.Migration):
    dependencies = [("netaclaw", "0001_initial")]
    operations = [migrations.RunPython(create_type, remove_type)]
