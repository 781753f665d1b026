"""``python -m scripted_llm [--port N] [--responder echo|long|tool_then_answer|slow]``: serve
until terminated, printing the URL first (benchmarks, subprocess servers)."""

from __future__ import annotations

from scripted_llm.server import main

if __name__ == "__main__":
    main()
