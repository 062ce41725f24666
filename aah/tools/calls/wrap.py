"""Turn endpoint specs into LangChain tools: one generic wrapper for all of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from aah.tools.builtin import (
    ASK_HUMAN,
    ASK_HUMAN_DESCRIPTION,
    ASK_HUMAN_PARAMETERS,
    FIND_TOOLS,
    FIND_TOOLS_DESCRIPTION,
    FIND_TOOLS_PARAMETERS,
)
from aah.tools.calls.arguments import arguments_model, parameters_schema
from aah.tools.spec import EndpointSpec

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

    from aah.tools.http import Executor

# OpenAI caps a function description at 1,024 characters.
_MAX_DESCRIPTION = 1000


def tool_description(spec: EndpointSpec) -> str:
    """The description the model reads: what the endpoint does, and which API."""
    text = spec.description.strip() or f"{spec.method} {spec.url_template}"
    text = f"{text} (API: {spec.tool}, {spec.category})"
    return text if len(text) <= _MAX_DESCRIPTION else text[: _MAX_DESCRIPTION - 1] + "…"


def wrap_endpoint(spec: EndpointSpec, executor: Executor) -> StructuredTool:
    """A LangChain tool that calls ``spec`` through ``executor``.

    Arguments are validated and coerced by the model generated from the
    spec's parameters before the call. The tool returns the compact result
    text for the model and the full ``ToolResult`` as the message artifact,
    for logging and scoring.
    """
    # Here, not at the top: the runtime sends the schemas (``openai_tool``)
    # and never a LangChain tool, whose module costs tens of ms at start-up.
    from langchain_core.tools import StructuredTool

    model = arguments_model(spec.qualified_name, spec.parameters)

    def validated(arguments: dict[str, Any]) -> dict[str, Any] | str:
        # Coerces what models often send ("52.5" for a number) and keeps the
        # source's argument names; None means "not given" and is left out.
        try:
            return model.model_validate(arguments).model_dump(by_alias=True, exclude_none=True)
        except ValidationError as exc:
            return f"invalid arguments for {spec.qualified_name}: {exc.errors()[0]['msg']}"

    def call(**arguments: Any) -> tuple[str, Any]:
        values = validated(arguments)
        if isinstance(values, str):
            return values, None
        result = executor.call(spec, values)
        return result.text, result

    async def acall(**arguments: Any) -> tuple[str, Any]:
        values = validated(arguments)
        if isinstance(values, str):
            return values, None
        result = await executor.acall(spec, values)
        return result.text, result

    return StructuredTool(
        name=spec.qualified_name,
        description=tool_description(spec),
        args_schema=parameters_schema(spec.parameters),
        func=call,
        coroutine=acall,
        response_format="content_and_artifact",
    )


def openai_tool(spec: EndpointSpec) -> dict[str, Any]:
    """``spec`` in OpenAI function format: what ``bind_tools`` would send for its tool.

    Built straight from the parameters, so offering a tool costs no LangChain
    tool object on the hot path.
    """
    return {
        "type": "function",
        "function": {
            "name": spec.qualified_name,
            "description": tool_description(spec),
            "parameters": parameters_schema(spec.parameters),
        },
    }


def ask_human_schema() -> dict[str, Any]:
    """The ``ask_human`` tool in OpenAI function format, for binding to a model.

    It is bound as a plain schema: the runtime answers it through a human
    channel, never by calling a function here.
    """
    return {
        "type": "function",
        "function": {
            "name": ASK_HUMAN,
            "description": ASK_HUMAN_DESCRIPTION,
            "parameters": parameters_schema(ASK_HUMAN_PARAMETERS),
        },
    }


def find_tools_schema() -> dict[str, Any]:
    """The ``find_tools`` tool in OpenAI function format, for binding to a model.

    Like ``ask_human`` it is a plain schema: the runtime answers it by
    searching the registry, never by calling a function here.
    """
    return {
        "type": "function",
        "function": {
            "name": FIND_TOOLS,
            "description": FIND_TOOLS_DESCRIPTION,
            "parameters": parameters_schema(FIND_TOOLS_PARAMETERS),
        },
    }


def one_line_description(spec: EndpointSpec, limit: int = 160) -> str:
    """``spec``'s description on one line, cut to ``limit`` characters (else method and URL)."""
    text = " ".join(spec.description.split()) or f"{spec.method} {spec.url_template}"
    return text if len(text) <= limit else text[: limit - 1] + "…"
