"""Chinese wording of one feature (see locale/zh/README.md); this module shows the shape."""

from __future__ import annotations

ZH: dict[str, str | list[str]] = {}
