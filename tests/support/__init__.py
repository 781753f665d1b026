"""Test support shared by the whole suite (the scripted LLM server and its fixture)."""

from __future__ import annotations
