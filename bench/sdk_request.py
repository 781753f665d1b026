"""Client CPU per streamed model call: the SDK's ``create()`` against our adapter's post.

    .venv/bin/python -m bench.sdk_request [--sizes 10,200,1000] [--calls 20] [--write]

Both send the same body (``build_openai_params`` of a synthetic conversation of N
messages, with the agent's built-in tools) to the scripted model over real HTTP and read
the whole SSE answer through the official ``openai`` SDK, on one client each. The only
difference: ``chat.completions.create(**params)`` runs the SDK's request transform over
the body; ``OpenAIProvider.stream`` posts the body as it is. Measured: CPU time of the
calling thread per call (the scripted server runs in another thread and is not counted),
median of ``--calls`` calls, the two alternating.

Then the transport under the SDK, as a busy server uses it (``--in-flight`` calls at once,
10 messages each, batches alternating): the SDK's default httpx2 client (16 calls per
client, its best) against its aiohttp client (``DefaultAioHttpClient``, what the adapters
use, spread as their pool spreads calls), the same SDK call otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from bench.report import write_section
from scripted_llm import ScriptedLLMServer

HEADING = "## Model request overhead"


def _request(size: int):  # type: ignore[no-untyped-def]
    from agents.tools import TodoStore, Workspace, default_registry
    from bench.compaction_core import synthetic_conversation
    from llm import LLMRequest

    tools = default_registry(Workspace(Path("/nonexistent")), TodoStore(items=[])).specs
    return LLMRequest(messages=tuple(synthetic_conversation(size)), tools=tuple(tools))


async def _measure(base_url: str, size: int, calls: int) -> tuple[float, float]:
    import openai

    from llm import ChannelConfig
    from llm.openai_adapter import OpenAIProvider, async_client, build_openai_params

    config = ChannelConfig(provider="openai_compatible", model="bench", base_url=base_url)
    request = _request(size)
    params = build_openai_params(request, config)
    provider = OpenAIProvider(config)
    sdk_client: openai.AsyncOpenAI = async_client(config)

    async def through_create() -> None:
        stream = await sdk_client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        async with stream:
            async for _chunk in stream:
                pass

    async def through_adapter() -> None:
        async for _event in provider.stream(request):
            pass

    samples: dict[str, list[float]] = {"create": [], "adapter": []}
    for _ in range(2):  # warm-up: connections, imports
        await through_create()
        await through_adapter()
    for _ in range(calls):
        for name, call in (("create", through_create), ("adapter", through_adapter)):
            start = time.thread_time()
            await call()
            samples[name].append(time.thread_time() - start)
    await sdk_client.close()
    return statistics.median(samples["create"]) * 1000, statistics.median(samples["adapter"]) * 1000


async def _measure_transports(base_url: str, in_flight: int, batches: int) -> dict[str, float]:
    """Client CPU per call, median over batches of ``in_flight`` concurrent streamed calls."""
    import openai

    from llm import ChannelConfig
    from llm.openai_adapter import (
        OpenAIStreamParser,
        _post_streaming,
        build_openai_params,
        client_kwargs,
    )
    from llm.transport import CALLS_PER_CLIENT, shared_ssl_context

    config = ChannelConfig(provider="openai_compatible", model="bench", base_url=base_url)
    body = {
        **build_openai_params(_request(10), config),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # (make, calls per client): httpx2 at the 16 its pool was tuned to, aiohttp as ours runs
    transports = {
        "httpx2": (lambda: openai.DefaultAsyncHttpxClient(verify=shared_ssl_context()), 16),
        "aiohttp": (
            lambda: openai.DefaultAioHttpClient(verify=shared_ssl_context()),
            CALLS_PER_CLIENT,
        ),
    }
    clients = {
        name: [
            openai.AsyncOpenAI(**client_kwargs(config), http_client=make())
            for _ in range(-(-in_flight // per_client))
        ]
        for name, (make, per_client) in transports.items()
    }

    async def one(client: openai.AsyncOpenAI) -> None:
        parser = OpenAIStreamParser(config.provider)
        chunks = await _post_streaming(client, body)
        async with chunks:
            async for chunk in chunks:
                parser.feed(chunk)
        parser.finish()

    async def batch(name: str) -> None:
        pool = clients[name]
        await asyncio.gather(*(one(pool[i % len(pool)]) for i in range(in_flight)))

    samples: dict[str, list[float]] = {name: [] for name in clients}
    for name in clients:  # warm-up: connections
        await batch(name)
    for _ in range(max(batches, 150 // in_flight)):  # at least 150 calls each
        for name in clients:
            start = time.thread_time()
            await batch(name)
            samples[name].append((time.thread_time() - start) / in_flight)
    for pool in clients.values():
        for client in pool:
            await client.close()
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def run(sizes: list[int], calls: int) -> list[tuple[int, float, float]]:
    rows = []
    with ScriptedLLMServer() as server:
        for size in sizes:
            create_ms, adapter_ms = asyncio.run(_measure(server.openai_base_url, size, calls))
            rows.append((size, create_ms, adapter_ms))
            print(f"  {size} messages: create() {create_ms:.1f} ms, adapter {adapter_ms:.1f} ms")
    return rows


def run_transports(levels: list[int], batches: int) -> list[tuple[int, dict[str, float]]]:
    rows = []
    with ScriptedLLMServer() as server:
        for in_flight in levels:
            ms = asyncio.run(_measure_transports(server.openai_base_url, in_flight, batches))
            rows.append((in_flight, ms))
            print(
                f"  {in_flight} in flight: httpx2 {ms['httpx2']:.2f} ms, aiohttp {ms['aiohttp']:.2f} ms"
            )
    return rows


def render(
    rows: list[tuple[int, float, float]],
    transports: list[tuple[int, dict[str, float]]],
    command: str,
) -> str:
    import os

    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores.",
        "",
        "Client CPU per streamed call (calling thread, median), same body, same SDK, same "
        "scripted server: `chat.completions.create()` runs the SDK's request transform over "
        "the body; the adapter posts it as built.",
        "",
        "| messages | create() (ms) | adapter (ms) | ratio |",
        "|---:|---:|---:|---:|",
    ]
    for size, create_ms, adapter_ms in rows:
        ratio = create_ms / adapter_ms if adapter_ms else float("nan")
        lines.append(f"| {size} | {create_ms:.1f} | {adapter_ms:.1f} | {ratio:.1f}× |")
    lines += [
        "",
        "The transport under the SDK with many calls in flight (client CPU per call, median over "
        "batches of concurrent calls, 10 messages each, the two transports alternating): the "
        "SDK's default httpx2 client, 16 calls per client (its best), against its aiohttp "
        "client, which the adapters use, spread as their pool spreads calls.",
        "",
        "| calls in flight | httpx2 (ms) | aiohttp (ms) | ratio |",
        "|---:|---:|---:|---:|",
    ]
    for in_flight, ms in transports:
        ratio = ms["httpx2"] / ms["aiohttp"] if ms["aiohttp"] else float("nan")
        lines.append(f"| {in_flight} | {ms['httpx2']:.2f} | {ms['aiohttp']:.2f} | {ratio:.1f}× |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sdk_request", description=__doc__)
    parser.add_argument("--sizes", default="10,200,1000")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--in-flight", default="1,100,400", help="concurrent calls per batch")
    parser.add_argument("--batches", type=int, default=25)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaclaw.settings")
    rows = run([int(s) for s in args.sizes.split(",")], args.calls)
    transports = run_transports([int(n) for n in args.in_flight.split(",")], args.batches)
    command = ".venv/bin/python -m bench.sdk_request " + " ".join(sys.argv[1:])
    text = render(rows, transports, command.strip())
    print(text)
    if args.write:
        write_section(text, HEADING)


if __name__ == "__main__":
    main()
