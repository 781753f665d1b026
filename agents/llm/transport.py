"""HTTP clients for the SDKs, sharing one TLS context.

Each call builds a fresh SDK client (async pools are bound to the event loop they
first ran on, and our callers run on many loops: Daphne, ``async_to_sync``, worker
threads, tests). Building the default client loads the system CA bundle every time
(~20 ms); building it around one shared ``SSLContext`` takes ~1 ms. An SSLContext is
safe to share between threads and loops.
"""

from __future__ import annotations

import ssl
from functools import lru_cache

import httpx2


@lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """The default verifying context httpx2 would build, built once per process."""
    return httpx2.create_ssl_context()
