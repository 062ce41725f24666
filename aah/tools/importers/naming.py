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
