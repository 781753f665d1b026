"""Forms of the chat list: renaming a chat (validation only; the write is a service)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from agents.services import TITLE_MAX_CHARS


class RenameChatForm(forms.Form):
    title = forms.CharField(
        label=_("Title"),
        max_length=TITLE_MAX_CHARS,
        strip=True,
        error_messages={"required": _("Enter a title.")},
    )
