from __future__ import annotations

from bench.ws_load.cli import main

if __name__ == "__main__":
    main()
