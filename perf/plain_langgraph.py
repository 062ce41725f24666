"""The same work as aah's batch run, done by a plain LangGraph agent: the CPU yardstick.

A plain agent is ``create_react_agent`` + ``ChatOpenAI`` + ``InMemorySaver``,
with no awareness step of its own, no checks, no store and no scrubber. To do
the same work as an aah session of an under-specified task it is given the
same prompts and tool schemas (the awareness question, asked first as one
plain model call, then the agent's system prompt, the task's endpoints and
``ask_human``), and the same fake model answers both, so each task is three
model calls either way: awareness, the question to the person, the answer.
Its ``ask_human`` answers at once with a fixed reply; tools are never called.

``perf/batch_bench.py`` runs it side by side with aah and prints the ratio.
Alone: .venv/bin/python perf/plain_langgraph.py [--tasks 599] [--concurrency 16]
(needs ``pip install langchain-openai``; the fake model runs in its own process).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import time
import warnings
from collections.abc import Sequence
from typing import Any

from aah.benchmark.failtalms.dataset import Task
from aah.llm import ModelConfig
from aah.runtime.awareness import SETTING_AWARENESS, awareness_questions, describe_tools
from aah.runtime.loop import run_async
from aah.runtime.prompts import load_prompt
from aah.tools import EndpointSpec
from aah.tools.calls.wrap import ask_human_schema, openai_tool
from aah.tools.registry.read import Registry

INSTALL_HINT = "the plain-LangGraph yardstick needs langchain-openai: pip install langchain-openai"
HUMAN_REPLY = "The one in Oslo."


def plain_available() -> bool:
    """Whether langchain-openai (the plain agent's model class) is installed."""
    return importlib.util.find_spec("langchain_openai") is not None


def _tool(schema: dict[str, Any]) -> Any:
    """A LangChain tool with exactly the JSON schema aah sends for it."""
    from langchain_core.tools import StructuredTool

    function = schema["function"]

    async def answer(**_: Any) -> str:
        return HUMAN_REPLY if function["name"] == "ask_human" else '{"ok": true}'

    return StructuredTool.from_function(
        coroutine=answer,
        name=function["name"],
        description=function["description"],
        args_schema=function["parameters"],
    )


def _system_prompt() -> str:
    rules = load_prompt("agent_ask_human").render()
    return load_prompt("agent_system").render(ask_human_rules=rules)


async def run_plain(
    tasks: Sequence[Task], registry: Registry, config: ModelConfig, concurrency: int
) -> int:
    """Run every task as a plain LangGraph agent; returns how many model calls were made."""
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI  # type: ignore[import-not-found,unused-ignore]
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    # create_react_agent's move to langchain.agents (which is not installed here).
    warnings.filterwarnings("ignore", message="create_react_agent has been moved")

    model = ChatOpenAI(
        base_url=config.base_url,
        api_key=config.api_key,
        model=config.model,
        max_retries=0,
    )
    saver = InMemorySaver()
    system = _system_prompt()
    tool_cache: dict[str, Any] = {"ask_human": _tool(ask_human_schema())}
    agents: dict[tuple[str, ...], Any] = {}
    limit = asyncio.Semaphore(concurrency)
    calls = 0

    def tools_for(specs: Sequence[EndpointSpec]) -> list[Any]:
        for spec in specs:
            if spec.qualified_name not in tool_cache:
                tool_cache[spec.qualified_name] = _tool(openai_tool(spec))
        return [tool_cache[spec.qualified_name] for spec in specs] + [tool_cache["ask_human"]]

    async def one(task: Task) -> None:
        nonlocal calls
        specs = [registry.get(name) for name in task.offered if name in registry]
        async with limit:
            for question in awareness_questions(SETTING_AWARENESS[task.setting]):
                prompt = load_prompt(f"awareness_{question}").render(
                    query=task.query, tools=describe_tools(specs, True)
                )
                await model.ainvoke([HumanMessage(prompt)])
                calls += 1
            # An agent per set of tools (compiled once: tasks share sets); one saver.
            names = tuple(spec.qualified_name for spec in specs)
            agent = agents.get(names)
            if agent is None:
                agent = create_react_agent(
                    model, tools_for(specs), prompt=system, checkpointer=saver
                )
                agents[names] = agent
            result = await agent.ainvoke(
                {"messages": [HumanMessage(task.query)]},
                {"configurable": {"thread_id": task.id}},
            )
            calls += sum(1 for message in result["messages"] if message.type == "ai")

    await asyncio.gather(*(one(task) for task in tasks))
    return calls


def measure_plain(
    tasks: Sequence[Task], registry: Registry, config: ModelConfig, concurrency: int
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and model calls of one plain run."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    calls = run_async(run_plain(tasks, registry, config, concurrency))
    return time.perf_counter() - wall0, time.process_time() - cpu0, calls


def main() -> None:
    """Run the plain agent alone and print its CPU per task."""
    import tempfile
    from pathlib import Path

    from batch_bench import fake_model

    from aah.benchmark.failtalms.dataset import load_tasks
    from aah.data.locate import find_data_dir
    from aah.tools.registry.build import build_registry

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=599)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    if not plain_available():
        raise SystemExit(f"error: {INSTALL_HINT}")
    data = find_data_dir(None, need_benchmark=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        build_registry(data, tmp / "registry.db")
        registry = Registry(tmp / "registry.db")
        tasks = load_tasks(data, ["underspecified"])[: args.tasks]
        with fake_model(tmp, 0) as config:
            measure_plain(tasks[:5], registry, config, 1)  # imports, connections
            wall, cpu, calls = measure_plain(tasks, registry, config, args.concurrency)
    print(
        f"plain LangGraph: {len(tasks)} tasks in {wall:.1f} s, {cpu / len(tasks) * 1000:.1f} ms "
        f"CPU per task, {calls / len(tasks):.1f} model calls per task"
    )


if __name__ == "__main__":
    main()
