"""``python -m bench.ws_load``: the options, then the warm-up and the rounds over every level
and server, then the report (printed; with ``--write`` recorded in BENCHMARKS.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench import ws_load
from bench.ws_load import report, servers
from bench.ws_load.client import IDLE_SECONDS, LevelResult, run_level
from bench.ws_load.servers import SERVERS, Stack

WARM_UP_TURNS = 1  # per client, at the largest level, before the recorded rounds


def run(
    levels: list[int],
    turns: int,
    py_spy: str | None,
    measured: tuple[str, ...] = SERVERS,
    repeat: int = 1,
    runner: str = "worker",
) -> tuple[list[LevelResult], list[LevelResult]]:
    """Every recorded level of every round, and the warm-up's results."""
    servers.check_environment()
    work = Path(tempfile.mkdtemp(prefix="netaclaw-ws-load-"))
    # fresh NetaClaw sessions for every level of every round (and the warm-up)
    warm_clients = max(levels)
    total = sum(levels) * repeat + warm_clients
    results: list[LevelResult] = []
    warm_results: list[LevelResult] = []
    try:
        with servers.started(work, total, runner) as stack:
            # warm-up at the largest level: a just-started process grows its pools
            # (NetaClaw: a keep-alive connection to the model per concurrent call),
            # caches and heap in its first burst; the rounds measure the steady state.
            # Reported apart ("cold first burst"), not pooled.
            warm = stack.pairs[:warm_clients]
            for server in measured:
                result = _serve(stack, server, warm, warm, WARM_UP_TURNS)
                warm_results.append(result)
                print(
                    f"  warm-up  {server:8} {warm_clients:4} clients: {report.outcome(result)}",
                    flush=True,
                )
            offset = warm_clients
            rounds = [(r, level) for r in range(repeat) for level in levels]
            for round_no, level in rounds:
                fresh = stack.pairs[offset : offset + level]  # NetaClaw: new sessions per level
                offset += level
                # every other round the other way round: a slow drift in the machine's
                # background load does not always fall on the same server
                order = measured if round_no % 2 == 0 else measured[::-1]
                for server in order:
                    spies = []
                    profiled = round_no == 0 and level == max(levels) and server != "direct"
                    if py_spy and profiled:
                        out = Path(py_spy)
                        for number, pid in enumerate(stack.targets[server].pids):
                            stem = f"{out.stem}.{server}" + (f".worker{number}" if number else "")
                            spies.append(servers.start_py_spy(pid, str(out.with_stem(stem))))
                    result = _serve(
                        stack,
                        server,
                        fresh,
                        stack.pairs[:level],
                        turns,
                        idle=IDLE_SECONDS,
                        model_pid=stack.model_pid,
                    )
                    for spy in spies:
                        if spy is not None:
                            servers.stop(spy, signal.SIGINT, timeout=30)
                    result.round = round_no
                    results.append(result)
                    print(
                        f"  {round_no + 1}/{repeat} {server:8} {level:4} clients: "
                        f"{report.outcome(result)} "
                        f"(connect {result.connect_seconds:.1f}s, "
                        f"run {result.wall_seconds:.1f}s, server CPU "
                        f"{result.server_cpu_seconds:.1f}s of it system "
                        f"{result.server_sys_seconds:.1f}s; scripted model CPU "
                        f"{result.model_cpu_seconds:.1f}s)",
                        flush=True,
                    )
    finally:
        servers.show_logs(work, {r.server for r in results if r.errors})
        shutil.rmtree(work, ignore_errors=True)
    return results, warm_results


def _serve(
    stack: Stack,
    server: str,
    sessions: list[tuple[str, str]],
    echo_pairs: list[tuple[str, str]],
    turns: int,
    *,
    idle: float = 0.0,
    model_pid: int | None = None,
) -> LevelResult:
    """One level on one server: NetaClaw chats in ``sessions`` (fresh ones), the echoes
    take any ids; the bare echo sends no stored answer and is not idled."""
    target = stack.targets[server]
    return asyncio.run(
        run_level(
            server,
            target.port,
            sessions if server == "netaclaw" else echo_pairs,
            turns,
            path=target.path,
            full=server != "direct",
            pids=target.pids,
            idle=idle if server != "direct" else 0.0,
            model_pid=model_pid if server == "netaclaw" else None,
        )
    )


def _shown_url(url: str) -> str:
    """The URL as the command was given, without a password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ws_load", description=ws_load.__doc__)
    parser.add_argument("--levels", default="100,250,500", help="concurrent clients per level")
    parser.add_argument("--turns", type=int, default=3, help="chat frames per client")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds over all levels, samples pooled"
    )
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="profile each server at the top level (FILE.netaclaw.txt, FILE.echo.txt…)",
    )
    parser.add_argument(
        "--servers",
        default=",".join(SERVERS),
        help="which of direct,echo,netaclaw to measure (investigation; --write wants all)",
    )
    parser.add_argument(
        "--runner",
        choices=servers.RUNNERS,
        default="worker",
        help="NetaClaw's turns on a job worker process beside the web process (production),"
        " or inside the web process (make run's runner)",
    )
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    if not levels or min(levels) < 1 or max(levels) > 2000 or not 1 <= args.turns <= 20:
        raise SystemExit("levels must be 1..2000 clients and --turns 1..20")
    if not 1 <= args.repeat <= 10:
        raise SystemExit("--repeat must be 1..10")
    command = " ".join(
        [
            f"DATABASE_URL={_shown_url(os.environ.get('DATABASE_URL', ''))}",
            f"REDIS_URL={_shown_url(os.environ.get('REDIS_URL', ''))}",
            ".venv/bin/python -m bench.ws_load",
            *(argv if argv is not None else sys.argv[1:]),
        ]
    )
    measured = tuple(x for x in SERVERS if x in args.servers.split(","))
    if args.write and measured != SERVERS:
        raise SystemExit("--write records all three servers; drop --servers")
    load = os.getloadavg()
    rounds, warm = run(levels, args.turns, args.py_spy, measured, args.repeat, args.runner)
    text = report.render(
        report.pooled(rounds),
        command=command,
        turns=args.turns,
        load=load,
        repeat=args.repeat,
        runner=args.runner,
        rounds=rounds,
        warm=warm,
    )
    print(text)
    if args.write:
        report.write(text)
