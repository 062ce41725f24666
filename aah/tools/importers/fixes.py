"""Project-written fixes to source defects, kept as data with a reason each.

The source data stays untouched; a fix is applied to the imported
``EndpointSpec`` while the registry is built. The file is YAML, a list of::

    - endpoint: spacex__query_launches           # qualified name
      reason: why the source is wrong and what the fix assumes
      set: {description: "..."}                    # description, method, url_template...
      remove_parameters: [query]
      add_parameters: [{name: query, type: object, required: true, location: body}]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from aah.errors import AahError
from aah.tools.spec import EndpointSpec, ParameterSpec

# Fields a fix may overwrite; identity fields (names, source) stay the source's.
_SETTABLE = {"description", "method", "url_template", "response", "category", "body_encoding"}


class EndpointFix(BaseModel):
    """One correction to one endpoint."""

    endpoint: str
    reason: str = Field(min_length=10)
    set: dict[str, Any] = Field(default_factory=dict)
    add_parameters: list[ParameterSpec] = Field(default_factory=list)
    remove_parameters: list[str] = Field(default_factory=list)


def load_fixes(path: Path) -> list[EndpointFix]:
    """Read the fixes file; a missing file means no fixes.

    Raises:
        AahError: the file is not a list of valid fixes.
    """
    if not path.is_file():
        return []
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        if not isinstance(raw, list):
            raise AahError(f"{path} must hold a YAML list of fixes")
        fixes = [EndpointFix.model_validate(item) for item in raw]
    except (yaml.YAMLError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise AahError(f"{path} is not a valid fixes file ({first}): correct it") from exc
    for fix in fixes:
        unknown = set(fix.set) - _SETTABLE
        if unknown:
            raise AahError(
                f"fix for {fix.endpoint} in {path} sets {sorted(unknown)}; "
                f"only {sorted(_SETTABLE)} may be set"
            )
    return fixes


def apply_fixes(endpoints: list[EndpointSpec], fixes: list[EndpointFix]) -> list[str]:
    """Apply every fix in place; returns one line per applied fix.

    A fix for a tool the sources do not hold at all is left out (a data
    folder of one's own need not hold every tool the project fixes).

    Raises:
        AahError: a fix names an endpoint its tool does not have (a typo).
    """
    by_name = {spec.qualified_name: index for index, spec in enumerate(endpoints)}
    tools = {spec.tool for spec in endpoints}
    applied: list[str] = []
    for fix in fixes:
        index = by_name.get(fix.endpoint)
        if index is None and fix.endpoint.partition("__")[0] not in tools:
            continue
        if index is None:
            raise AahError(
                f"fix names unknown endpoint {fix.endpoint!r}: correct or remove it "
                "in tool_registry/fixes.yaml"
            )
        endpoints[index] = _fixed(endpoints[index], fix)
        applied.append(f"{fix.endpoint}: {fix.reason}")
    return applied


def _fixed(spec: EndpointSpec, fix: EndpointFix) -> EndpointSpec:
    kept = [p for p in spec.parameters if p.name not in set(fix.remove_parameters)]
    data = spec.model_dump()
    data.update(fix.set)
    data["parameters"] = [p.model_dump() for p in [*kept, *fix.add_parameters]]
    data["repairs"] = [*spec.repairs, f"project fix: {fix.reason}"]
    return EndpointSpec.model_validate(data)
