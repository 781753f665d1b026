"""Runs: where a session's work runs (issue 24).

A turn, a retry, a manual compaction, the background preparation of the next summary —
each is a job (``runs.jobs``), run by one of two runners behind one interface
(``runs.runner``): ``make run`` runs jobs inside its one process (``runs.inprocess``);
production runs them as durable jobs on Procrastinate in worker processes apart from the
web (``runs.worker``, ``make worker``). The web and socket layers only hand work over.
"""
