"""The system dictionary: the seed's dict_type / dict_info (§4.1, §5.4)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class DictType(models.Model):
    name = models.CharField(_("name"), max_length=100)
    key = models.SlugField(_("key"), max_length=100, unique=True)

    class Meta:
        verbose_name = _("dictionary type")
        verbose_name_plural = _("dictionary types")
        ordering = ["key"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key})"


class DictInfo(models.Model):
    type = models.ForeignKey(DictType, on_delete=models.CASCADE, related_name="entries")
    name = models.CharField(_("name"), max_length=100)
    value = models.TextField(_("value"), blank=True)
    remark = models.CharField(_("remark"), max_length=255, blank=True)

    class Meta:
        verbose_name = _("dictionary entry")
        verbose_name_plural = _("dictionary entries")
        ordering = ["type__key", "name"]
        constraints = [
            models.UniqueConstraint(fields=["type", "name"], name="dictinfo_unique_name_per_type")
        ]

    def __str__(self) -> str:
        return f"{self.type.key}.{self.name}"
