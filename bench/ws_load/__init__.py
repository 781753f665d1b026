"""WebSocket load: N concurrent chat sockets against NetaClaw, next to an echo yardstick.

    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python -m bench.ws_load \
        [--levels 100,250,500] [--turns 3] [--repeat 1] [--write] [--py-spy FILE.svg|.txt|.json]

Needs ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``: the production shape. The run

1. starts the scripted model (``python -m scripted_llm --responder echo``, streaming over
   the OpenAI SSE wire) in its own process;
2. creates a throwaway database of this run's own (``bench.databases``) on that server,
   migrates it and creates, with a small Django script in a subprocess, one user + token + session per
   client and round, and one agent whose model channel points at the scripted model
   (window 10 M tokens: no compaction, this measures the chat path);
3. starts one Daphne serving NetaClaw (``DJANGO_DEBUG=0``, its own Redis key prefix) and
   one Daphne serving ``bench/echo_asgi.py``: the yardstick (``/ws/chat/``: the same
   consumer base class and channel layer, the same six events per turn through Redis, no
   authentication, database or model) and the bare echo (``/ws/direct/``: no layer);
4. warms each server up with one turn per client at the largest level (a just-started
   process grows its pools, caches and heap in that first burst; reported apart, not
   pooled), then for each level N, on each server in turn: N ``websockets`` clients connect (token
   header), then all at once each sends ``--turns`` chat frames, each after the previous
   ``turn_done``, and times send → first ``delta`` and send → ``turn_done``; a turn counts
   only with a delta, the stored answer (``message`` from the assistant) and
   ``turn_done``. Every other outcome is an error: a failed connect (all its turns), an
   ``error`` event, a closed socket (1011…), a timeout, a missing delta or answer, every
   turn a failed client could not run, and every socket the server closes while the
   clients idle for a few seconds after their turns;
5. prints p50/p99 per level and server, the errors, the server's CPU time per turn,
   p99(NetaClaw) / p99(echo yardstick) against the target (≤ 3×, no errors), that ratio
   in each round, and each turn's stages by its index in the session.

Every loop is bounded (a timeout per turn and per level), all traffic stays on
127.0.0.1, and every process it starts is stopped and the database dropped at the end.
``--write`` records the tables, date, core count and command in BENCHMARKS.md
("WebSocket load"), leaving the other sections alone.

One module per job: ``servers`` (the processes, the database and its fixtures, the CPU
clock), ``fixtures`` (the Django script run in a subprocess), ``client`` (the sockets:
connect, send the chat frames, time each turn), ``report`` (the statistics, the verdict
and the Markdown section), ``cli`` (the options, the warm-up and the rounds).
"""
