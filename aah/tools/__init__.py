"""The tool layer: endpoint specs, importers, registry, HTTP execution, checks."""

from aah.tools.spec import (
    EndpointSource,
    EndpointSpec,
    ImportResult,
    ParameterSpec,
    ParamLocation,
    Rejection,
    ResponseSketch,
    qualified_name,
)

__all__ = [
    "EndpointSource",
    "EndpointSpec",
    "ImportResult",
    "ParamLocation",
    "ParameterSpec",
    "Rejection",
    "ResponseSketch",
    "qualified_name",
]
