"""Test support shared by the whole suite: fixtures and helpers.

The scripted LLM server the ``llm_server`` fixture starts is the top-level package
``scripted_llm`` (the benchmarks use it too).
"""

from __future__ import annotations
