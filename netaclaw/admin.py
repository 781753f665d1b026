from __future__ import annotations

from django.contrib import admin

from netaclaw.models import DictInfo, DictType


class DictInfoInline(admin.TabularInline):
    model = DictInfo
    extra = 0


@admin.register(DictType)
class DictTypeAdmin(admin.ModelAdmin):
    list_display = ["key", "name"]
    search_fields = ["key", "name"]
    inlines = [DictInfoInline]


@admin.register(DictInfo)
class DictInfoAdmin(admin.ModelAdmin):
    list_display = ["type", "name", "value", "remark"]
    list_filter = ["type"]
    search_fields = ["name", "value"]
