"""Helpers shared by the source importers."""

from __future__ import annotations

from aah.tools.spec import EndpointSpec, qualified_name


def unique_endpoint(spec: EndpointSpec, taken: set[str]) -> EndpointSpec:
    """``spec``, renamed ``<name>_2``, ``_3``... if its qualified name is taken.

    The name is added to ``taken``; a rename is recorded as a repair.
    """
    if spec.qualified_name not in taken:
        taken.add(spec.qualified_name)
        return spec
    number = 2
    while qualified_name(spec.tool, f"{spec.name}_{number}") in taken:
        number += 1
    name = f"{spec.name}_{number}"
    note = f"endpoint name {spec.name!r} repeats within tool {spec.tool!r}: renamed {name!r}"
    renamed = spec.model_copy(
        update={
            "name": name,
            "qualified_name": qualified_name(spec.tool, name),
            "repairs": [*spec.repairs, note],
        }
    )
    taken.add(renamed.qualified_name)
    return renamed


# The benchmark files name some tools differently from the tool files'
# ``tool_name`` (case, or the file stem instead of the name inside).
_BENCHMARK_TOOL_ALIASES = {
    "DnD5": "dnd5",
    "jikan": "Jikan",
    "jobicy": "remotejobs",
    "ronswanson": "Ronswanson",
}


def benchmark_endpoint_name(tool_name: str, api_name: str) -> str:
    """The registry's qualified name for a benchmark ``api_list`` item.

    Here, not beside the importer, so that reading the benchmark's tasks
    does not load the importer's parsers (YAML among them).

    Args:
        tool_name: the item's ``tool_name``.
        api_name: the item's ``api_name``.

    Returns:
        The ``<tool>__<endpoint>`` name the imported endpoint has.
    """
    return qualified_name(_BENCHMARK_TOOL_ALIASES.get(tool_name, tool_name), api_name)
