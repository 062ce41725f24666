"""What the terminal app can run: demo tasks, benchmark tasks, or typed free text.

Each source becomes one ``TuiTask``: the query, the offered endpoints, the
awareness questions to ask, the tools broken from the start, and the script
the scripted demo model plays when no real model is configured. Free text
and benchmark tasks get a generic script that asks one question, calls the
first tool and answers; every script copes with a tool broken mid-session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import SecretStr

from aah.config import get_settings
from aah.errors import AahError
from aah.tools import ASK_HUMAN, FIND_TOOLS, EndpointSpec, ParameterSpec
from aah.tools.http import FaultKind, FaultPlan

# LangChain and openai take seconds to import: the app's first screen must
# not wait for them, so they load where a session needs them.
if TYPE_CHECKING:
    from aah.benchmark import DemoTask
    from aah.benchmark.failtalms import Task
    from aah.events import AwarenessMode
    from aah.llm import ModelConfig
    from aah.testing import FakeLLMServer
    from aah.tools.registry import Registry

TaskSource = Literal["demo", "benchmark", "free"]
FREE_TEXT_TOOLS = 3  # endpoints a typed request is offered, best search hits first

# What both awareness prompts say and no agent turn does: how the scripted
# model tells the awareness question from the agent's own steps.
_AWARENESS_MARKER = "Answering No means"
# How a failed tool result begins (aah.tools.http.results), and how a person would say it.
_FAILURE_MARKERS = {
    "HTTP 5": "answered with a server error",
    "HTTP 4": "refused the request (a client error: the endpoint may be gone)",
    "request failed": "did not answer (no response, or the connection was refused)",
    "(empty body)": "answered with nothing at all",
}


@dataclass(frozen=True)
class TuiTask:
    """One thing to run, whatever source it came from.

    Attributes:
        title: A short name for the timeline.
        query: The user's request.
        specs: The endpoints offered to the agent.
        awareness: Which awareness questions to ask before acting.
        script: What the scripted demo model plays for this task.
        faults: Tools broken from the start (tool name → fault kind).
        task_id: The demo or benchmark task id, if any.
        setting: The benchmark setting, if any.
        context: Extra context a person answering the agent sees.
        discover: The agent starts with ``find_tools`` (no endpoint handed
            to it) and the endpoints it finds join its tools.
        likely: With ``discover``, what a search for the request finds now:
            shown, and offered for breaking before the agent finds them.
    """

    title: str
    query: str
    specs: tuple[EndpointSpec, ...]
    awareness: AwarenessMode
    script: dict[str, Any]
    faults: dict[str, FaultKind] = field(default_factory=dict)
    task_id: str | None = None
    setting: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    discover: bool = False
    likely: tuple[str, ...] = ()

    @property
    def tool_names(self) -> list[str]:
        """The qualified names of the offered endpoints (the likely finds when discovering)."""
        return [spec.qualified_name for spec in self.specs] + list(self.likely)

    @property
    def tools_line(self) -> str:
        """The tools in a few words: the offered ones, or how they are found."""
        names = ", ".join(self.tool_names)
        if self.discover:
            return "found as it goes (find_tools)" + (f", likely {names}" if names else "")
        return names or "none"


def configured_model() -> ModelConfig | None:
    """The agent model AAH_BASE_URL and AAH_MODEL name, or None: then the scripted one plays."""
    from aah.llm import model_config

    settings = get_settings()
    return model_config("agent") if settings.model and settings.base_url else None


class ScriptedModel:
    """The scripted demo model: a fake OpenAI-compatible server on 127.0.0.1.

    It starts on first use and plays the script of the task at hand, exactly
    as ``aah demo`` does without a configured model.
    """

    def __init__(self) -> None:
        self._server: FakeLLMServer | None = None

    def config_for(self, script: dict[str, Any]) -> ModelConfig:
        """A model config whose answers follow ``script`` from its start."""
        from aah.llm import ModelConfig
        from aah.testing import FakeLLMServer

        if self._server is None:
            self._server = FakeLLMServer(script).start()
        else:
            self._server.set_script(script)
        return ModelConfig(
            base_url=self._server.base_url,
            model="fake-model",
            api_key=SecretStr("demo"),
            retries=0,
        )

    def close(self) -> None:
        """Stop the server, if it ever started."""
        if self._server is not None:
            self._server.stop()
            self._server = None


def demo_choice(task: DemoTask, registry: Registry) -> TuiTask:
    """A demo task, with its own script and its fault plan as broken tools.

    Raises:
        AahError: the registry lacks one of the task's endpoints.
    """
    from aah.benchmark import demo_script

    specs = tuple(registry.get(name) for name in task.tools)
    plan = FaultPlan.parse(task.fault) if task.fault else FaultPlan()
    quoted = demo_script(task, specs)
    script = quoted if task.fault else with_coping_rules(quoted, specs)
    hint = {"demo_answer": task.human_answers[0]} if task.human_answers else {}
    return TuiTask(
        title=task.title,
        query=task.query,
        specs=specs,
        awareness=task.awareness,
        script=script,
        faults={rule.pattern: rule.kind for rule in plan.rules},
        task_id=f"demo-{task.id}",
        context=hint,
    )


def benchmark_choice(task: Task, registry: Registry) -> TuiTask:
    """A benchmark task: its offered endpoints (those the registry has) and setting."""
    from aah.runtime import SETTING_AWARENESS

    specs = tuple(registry.get(name) for name in task.offered if name in registry)
    return TuiTask(
        title=f"{task.setting} task {task.query_id}",
        query=task.query,
        specs=specs,
        awareness=SETTING_AWARENESS[task.setting],
        script=generic_script(specs),
        task_id=task.id,
        setting=task.setting,
        # The person answering plays the user, who knows the full request.
        context={"original_query": task.original_query or task.query},
    )


def free_text_choice(query: str, registry: Registry, k: int = FREE_TEXT_TOOLS) -> TuiTask:
    """A typed request: the agent finds its tools as it goes, as ``aah run`` with none named.

    It starts with ``find_tools`` (``k`` endpoints a search) and ``ask_human``;
    the scripted demo model searches for the request itself, then calls the
    best match.

    Raises:
        AahError: the request is empty.
    """
    text = " ".join(query.split())
    if not text:
        raise AahError("type a request first")
    found = tuple(hit.spec for hit in registry.search(text, k))
    return TuiTask(
        title="Your request",
        query=text,
        specs=(),
        awareness="both",
        script=generic_script(found, find_first=text),
        discover=True,
        likely=tuple(spec.qualified_name for spec in found),
    )


def load_benchmark(data: Path | None) -> tuple[list[Task], str]:
    """The benchmark tasks, or none and the reason in one line.

    The benchmark is optional for the app: without the data, that source says
    how to get it and the others still work.
    """
    from aah.benchmark.failtalms import load_tasks
    from aah.data import find_data_dir

    try:
        return load_tasks(find_data_dir(data, need_benchmark=True)), ""
    except AahError as exc:
        return [], str(exc)


def generic_script(specs: Sequence[EndpointSpec], find_first: str | None = None) -> dict[str, Any]:
    """A script for any task: awareness IDK, one question, one tool call, an answer.

    With Ask-and-Help off the question is skipped; with no endpoints the
    answer follows the question directly. With ``find_first`` (a need) the
    model calls ``find_tools`` with it before the call, and ``specs`` are
    what that search finds.
    """
    first = specs[0].qualified_name if specs else None
    call_first = _call(specs[0].qualified_name, placeholder_arguments(specs[0])) if specs else None
    if find_first is not None:
        search = _call(FIND_TOOLS, {"need": find_first})
        found_rule = {"when": {"last_tool_name": FIND_TOOLS}, "reply": call_first}
        call_first, discovery = search, ([found_rule] if first is not None else [])
    else:
        discovery = []
    after_answer = call_first or (
        "Thank you. With what you told me I would answer your request, but no tool "
        "was found for it; this reply comes from the scripted demo model."
    )
    rules: list[dict[str, Any]] = [
        {
            "when": {"has_tools": False, "last_message_contains": _AWARENESS_MARKER},
            "reply": "IDK: I may need a detail from the user, but I will try.",
        }
    ]
    if first is not None:
        rules += _coping_rules(first)
        rules.append(
            {
                "when": {"last_tool_name": first},
                "reply": f"Here is the answer, taken from the {first} result above "
                "(the scripted demo model does not read results).",
            }
        )
    rules += discovery
    rules += [
        {"when": {"last_tool_name": ASK_HUMAN}, "reply": after_answer},
        {
            "when": {"tool_offered": ASK_HUMAN},
            "reply": _call(ASK_HUMAN, {"question": "Which details should I use for this?"}),
        },
    ]
    if call_first is not None:
        rules.append({"when": {"has_tools": True}, "reply": call_first})
    rules.append({"reply": "I cannot do this: no tool I was given covers the request."})
    return {"rules": rules}


def with_coping_rules(script: dict[str, Any], specs: Sequence[EndpointSpec]) -> dict[str, Any]:
    """``script`` with rules first that answer gracefully when a tool fails.

    A demo task's script expects its tools to work; these rules make the
    scripted model cope when someone breaks one of them during the session.
    """
    if "rules" not in script:
        return script
    coping = [rule for spec in specs for rule in _coping_rules(spec.qualified_name)]
    return {**script, "rules": coping + list(script["rules"])}


def _coping_rules(tool: str) -> list[dict[str, Any]]:
    return [
        {
            "when": {"last_tool_name": tool, "last_message_contains": marker},
            "reply": f"I could not finish this: the {tool} service {what}. That is a "
            "problem on the service's side, not with your request; please try again later.",
        }
        for marker, what in _FAILURE_MARKERS.items()
    ]


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def placeholder_arguments(spec: EndpointSpec) -> dict[str, Any]:
    """Values of the right type for ``spec``'s required parameters.

    The scripted model cannot read the request; these let its call pass the
    checks and reach the (mock or broken) tool.
    """
    return {p.name: _placeholder(p) for p in spec.parameters if p.required}


def _placeholder(parameter: ParameterSpec) -> Any:
    if parameter.enum:
        return parameter.enum[0]
    if parameter.default is not None:
        return parameter.default
    values: dict[str, Any] = {
        "string": "example",
        "integer": 1,
        "number": 1.0,
        "boolean": True,
        "array": [],
        "object": {},
    }
    return values[parameter.type]
