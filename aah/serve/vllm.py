"""``aah serve vllm``: a vLLM server started with what the model family needs for tools.

vLLM returns native ``tool_calls`` only when it is started with
``--enable-auto-tool-choice`` and the tool-call parser of the model's
family, and it answers every request that sets ``tool_choice: "auto"`` (aah
sends it whenever tools are offered) with HTTP 400 otherwise. Reasoning
models also need a reasoning parser, which moves their thinking into the
reply's ``reasoning`` field. The table below says which each family takes
(names as in vLLM's tool-calling and reasoning-outputs documentation).

A model whose family is not in the table is refused unless the extra
arguments name a ``--tool-call-parser``: started without one, every agent
request would fail, and guessing a parser gives wrong calls.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from aah.errors import AahError
from aah.serve.process import LOOPBACK, ServedModel

VLLM_EXTRA_HINT = "pip install 'aah[vllm]' (vLLM needs a GPU)"


class VllmFamily(NamedTuple):
    """What vLLM needs to serve one model family's tool calls and reasoning.

    Attributes:
        name: The family, as ``--family`` names it.
        markers: Lower-case substrings of a model id that identify the family.
        tool_parser: ``--tool-call-parser``.
        chat_template: A tool chat template from vLLM's ``examples`` folder, for
            families whose own template does not render tools the way the
            parser reads them; used when vLLM ships it.
        reasoning_parser: ``--reasoning-parser``, for families that think aloud.
    """

    name: str
    markers: tuple[str, ...]
    tool_parser: str
    chat_template: str | None = None
    reasoning_parser: str | None = None


# First match wins: more specific markers come first.
VLLM_FAMILIES: tuple[VllmFamily, ...] = (
    VllmFamily("qwen3-coder", ("qwen3-coder",), "qwen3_coder"),
    VllmFamily("qwen3", ("qwen3",), "hermes", reasoning_parser="qwen3"),
    VllmFamily("qwq", ("qwq",), "hermes", reasoning_parser="deepseek_r1"),
    VllmFamily("qwen2.5", ("qwen2.5", "qwen2"), "hermes"),
    VllmFamily("hermes", ("hermes",), "hermes"),
    VllmFamily(
        "llama4",
        ("llama-4", "llama4"),
        "llama4_pythonic",
        "tool_chat_template_llama4_pythonic.jinja",
    ),
    VllmFamily(
        "llama3.2",
        ("llama-3.2", "llama3.2"),
        "llama3_json",
        "tool_chat_template_llama3.2_json.jinja",
    ),
    VllmFamily(
        "llama3", ("llama-3", "llama3"), "llama3_json", "tool_chat_template_llama3.1_json.jinja"
    ),
    VllmFamily("mistral", ("mistral", "mixtral", "ministral", "magistral", "devstral"), "mistral"),
    VllmFamily("gpt-oss", ("gpt-oss",), "openai"),
    VllmFamily("granite", ("granite",), "granite", "tool_chat_template_granite.jinja", "granite"),
    VllmFamily("xlam", ("xlam",), "xlam"),
    VllmFamily("phi4-mini", ("phi-4-mini", "phi4-mini"), "phi4_mini_json"),
)


class VllmPlan(NamedTuple):
    """The ``vllm serve`` command, where it will answer, and what was chosen."""

    command: list[str]
    served: ServedModel
    ready_url: str
    family: VllmFamily | None
    notes: list[str]


def vllm_family(model: str, name: str | None = None) -> VllmFamily | None:
    """The family ``name`` names, else the first whose marker is in ``model``.

    Raises:
        AahError: ``name`` is not a family in the table.
    """
    if name is not None:
        for family in VLLM_FAMILIES:
            if family.name == name:
                return family
        known = ", ".join(f.name for f in VLLM_FAMILIES)
        raise AahError(f"unknown model family {name!r}: use one of {known}")
    lowered = model.lower()
    return next((f for f in VLLM_FAMILIES if any(m in lowered for m in f.markers)), None)


def plan_vllm(
    model: str,
    *,
    port: int,
    tensor_parallel: int = 1,
    data_parallel: int = 1,
    family_name: str | None = None,
    extra: Sequence[str] = (),
    host: str = LOOPBACK,
    executable: str = "vllm",
) -> VllmPlan:
    """The ``vllm serve`` command for ``model`` with its family's parsers.

    Flags given in ``extra`` win over the table's: they are passed last, and
    a parser or template named there is not added again.

    Raises:
        AahError: the family is unknown and ``extra`` names no tool-call parser.
    """
    family = vllm_family(model, family_name)
    given = {arg.split("=", 1)[0] for arg in extra if arg.startswith("--")}
    notes: list[str] = []
    if family is None and "--tool-call-parser" not in given:
        known = ", ".join(f.name for f in VLLM_FAMILIES)
        raise AahError(
            f"no tool-call parser known for {model}: pass --family NAME ({known}) or "
            "`-- --tool-call-parser NAME` (see vLLM's tool calling docs)"
        )
    command = [executable, "serve", model, "--host", host, "--port", str(port)]
    if tensor_parallel > 1:
        command += ["--tensor-parallel-size", str(tensor_parallel)]
    if data_parallel > 1:
        command += ["--data-parallel-size", str(data_parallel)]
    if "--enable-auto-tool-choice" not in given:
        command.append("--enable-auto-tool-choice")
    if family is not None:
        if "--tool-call-parser" not in given:
            command += ["--tool-call-parser", family.tool_parser]
        if family.chat_template and "--chat-template" not in given:
            template = vllm_example(family.chat_template)
            if template is not None:
                command += ["--chat-template", str(template)]
            else:
                notes.append(
                    f"vLLM's {family.chat_template} was not found: the model's own chat "
                    "template is used (pass `-- --chat-template PATH` to change it)"
                )
        if family.reasoning_parser and "--reasoning-parser" not in given:
            command += ["--reasoning-parser", family.reasoning_parser]
    command += list(extra)
    base_url = f"http://{host}:{port}/v1"
    return VllmPlan(
        command=command,
        served=ServedModel(base_url, _served_name(model, extra)),
        ready_url=f"http://{host}:{port}/health",
        family=family,
        notes=notes,
    )


def vllm_example(name: str) -> Path | None:
    """``name`` in the ``examples`` folder of the installed vLLM, if it ships one."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for candidate in (
            Path(folder) / "examples" / name,
            Path(folder).parent / "examples" / name,
        ):
            if candidate.is_file():
                return candidate
    return None


def _served_name(model: str, extra: Sequence[str]) -> str:
    """The id vLLM answers to: ``--served-model-name`` when given, else the model."""
    args = list(extra)
    for index, arg in enumerate(args):
        if arg == "--served-model-name" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--served-model-name="):
            return arg.split("=", 1)[1]
    return model
