"""An ACEBench item's offered functions as the tools an aah session offers.

ACEBench writes its functions as BFCL does (``type: dict``, ``float``...),
so they go through the one BFCL conversion (``when2call.tools``): a valid
tool name, parameters in JSON Schema, one ``EndpointSpec`` each. The specs'
URLs are never called: the runner answers every call with a neutral result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aah.benchmark.when2call import When2CallTool, endpoint_spec, function_tool
from aah.errors import AahError
from aah.tools import EndpointSpec

if TYPE_CHECKING:
    from aah.benchmark.acebench.tasks import AceTask


def convert(functions: Sequence[Mapping[str, Any]], where: str) -> tuple[When2CallTool, ...]:
    """The functions as tools, each name valid and distinct, each one a spec can offer.

    Raises:
        AahError: a function that is no schema, a name that cannot be
            mapped, or two functions with one name.
    """
    tools = tuple(function_tool(dict(f), where) for f in functions)
    for tool in tools:
        try:
            endpoint_spec(tool)
        except (TypeError, ValueError) as exc:
            # A schema part of the wrong kind (``required`` a number...): pydantic's
            # or Python's complaint, first line only.
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise AahError(
                f"{where}: the function {tool.original!r} is no schema ({first})"
            ) from None
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        repeated = next(name for name in names if names.count(name) > 1)
        raise AahError(f"{where}: two functions share the name {repeated!r}")
    return tools


def offered_tools(task: AceTask) -> tuple[When2CallTool, ...]:
    """The tools of a task (its functions were checked when it loaded)."""
    return convert(task.functions, task.id)


def offered_specs(task: AceTask) -> list[EndpointSpec]:
    """The tool specs a session offers for a task."""
    return [endpoint_spec(tool) for tool in offered_tools(task)]
