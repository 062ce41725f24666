"""Runtime CPU per task: sessions against the fake model at zero latency.

The fake model runs in its own process, so this process's CPU time is aah's
own (graph, checks, model client, store, checkpointer). Each task: awareness
(2 questions), a tool call in mock mode, a final answer. Also prints the cost
of one logged event as seen from a session.

Run: .venv/bin/python perf/runtime_cpu.py [--tasks N] [--concurrency C]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

from aah.llm import ModelConfig
from aah.runtime.environment import open_runtime
from aah.runtime.humans import ScriptedHuman
from aah.runtime.loop import run_async
from aah.runtime.session import SessionRequest, run_session
from aah.tools.spec import EndpointSource, EndpointSpec, ParameterSpec, ResponseSketch

SCRIPT = {
    "rules": [
        {"when": {"has_tools": False}, "reply": "Yes: everything is there."},
        {"when": {"last_tool_name": "weather__forecast"}, "reply": "It is sunny."},
        {
            "when": {"has_tools": True},
            "reply": {"tool_calls": [{"name": "weather__forecast", "arguments": {"city": "Oslo"}}]},
        },
    ]
}
SPEC = EndpointSpec(
    tool="weather",
    category="Weather",
    name="forecast",
    qualified_name="weather__forecast",
    description="Forecast for a city.",
    url_template="https://api.example.org/forecast",
    parameters=[ParameterSpec(name="city", required=True)],
    response=ResponseSketch(kind="template", content={"temp": "float", "summary": "string"}),
    source=EndpointSource(kind="builtin"),
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def run_tasks(db: Path, config: ModelConfig, tasks: int, concurrency: int) -> None:
    async with open_runtime(db=db, model=config, human=ScriptedHuman([])) as runtime:
        runtime.store.create_run("perf", {"purpose": "runtime cpu"})
        limit = asyncio.Semaphore(concurrency)

        async def one(index: int) -> None:
            async with limit:
                request = SessionRequest("Weather in Oslo?", [SPEC], run="perf", task_id=str(index))
                outcome = await run_session(request, runtime)
                assert outcome.status == "finished", outcome

        await asyncio.gather(*(one(i) for i in range(tasks)))


async def client_only_calls(config: ModelConfig, tasks: int, concurrency: int) -> None:
    """The model client's share: the same 4 chat requests per task, nothing else."""
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    from aah.llm import ChatClient
    from aah.tools.calls.wrap import openai_tool

    client = ChatClient(config)
    tools = [openai_tool(SPEC)]
    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            for _ in range(2):
                await client.complete([HumanMessage("awareness?")])
            messages = [SystemMessage("You are an agent."), HumanMessage("Weather in Oslo?")]
            reply = await client.complete(messages, tools)
            call = reply.tool_calls[0]
            messages += [reply, ToolMessage('{"temp": 1}', tool_call_id=call["id"] or "")]
            await client.complete(messages, tools)

    await asyncio.gather(*(one() for _ in range(tasks)))
    await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", action="store_true", help="Print where the time goes.")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key for --profile.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps(SCRIPT))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "aah", "fake-llm", "--script", str(script), "--port", str(port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            server.stdout.readline()  # serving...
            config = ModelConfig(
                base_url=f"http://127.0.0.1:{port}/v1",
                model="fake-model",
                api_key=SecretStr("x"),
                retries=0,
            )
            run_async(run_tasks(Path(tmp) / "warm.db", config, 5, 1))  # imports, caches
            profiler = cProfile.Profile() if args.profile else None
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if profiler:
                profiler.enable()
            run_async(run_tasks(Path(tmp) / "perf.db", config, args.tasks, args.concurrency))
            if profiler:
                profiler.disable()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            floor0 = time.process_time()
            run_async(client_only_calls(config, args.tasks, args.concurrency))
            floor = time.process_time() - floor0
        finally:
            server.terminate()
            server.wait()
    per_task = cpu / args.tasks * 1000
    print(
        f"{args.tasks} tasks, concurrency {args.concurrency}: "
        f"{per_task:.1f} ms CPU per task (target <= 10 ms), "
        f"{args.tasks / wall:.1f} tasks/s wall; each task = 4 model calls, 1 tool call, "
        "about 10 logged events"
    )
    print(
        f"of which the model client (the same 4 requests alone): "
        f"{floor / args.tasks * 1000:.1f} ms; the rest (graph, checkpoints, store, tools): "
        f"{(cpu - floor) / args.tasks * 1000:.1f} ms"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(30)


if __name__ == "__main__":
    main()
