"""Nested BFCL parameter schemas reach the model whole: inner fields, items, enums, required.

A BFCL function's parameter may be an object with its own properties (at any
depth), an array of such objects, or hold enums and required lists inside.
The tool the model is offered (native tools and the prompt alike read
``openai_tool``) must carry all of it. The corpus is every such function in
BFCL's single-turn data and When2Call's questions, plus shapes made up here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from aah.benchmark.bfcl import CATEGORIES, bfcl_source, load_bfcl
from aah.benchmark.when2call import (
    When2CallTool,
    endpoint_spec,
    function_tool,
    load_when2call,
)
from aah.tools.calls import arguments_models, openai_tool


def structure(schema: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """Every inner part of a schema, as paths: fields, items, enums, required lists, types."""
    for name, inner in (schema.get("properties") or {}).items():
        where = f"{path}.{name}"
        yield where
        if isinstance(inner, Mapping):
            yield from structure(inner, where)
            if "type" in inner:
                yield f"{where} type={json.dumps(inner['type'])}"
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from structure(items, f"{path}[]")
        if path and "type" in items:
            yield f"{path}[] type={json.dumps(items['type'])}"
    if path and schema.get("enum"):
        yield f"{path} enum={json.dumps(schema['enum'])}"
    if path and schema.get("required"):
        yield f"{path} required={json.dumps(sorted(schema['required']))}"


def lost_parts(tool: When2CallTool) -> set[str]:
    """The inner parts of ``tool``'s parameters the offered tool leaves out."""
    offered = openai_tool(endpoint_spec(tool))["function"]["parameters"]
    lost: set[str] = set()
    for name, schema in (tool.parameters.get("properties") or {}).items():
        given = offered["properties"].get(name, {})
        lost |= set(structure(schema, name)) - set(structure(given, name))
    return lost


def has_inner_parts(tool: When2CallTool) -> bool:
    return any(
        any(True for _ in structure(schema, name))
        for name, schema in (tool.parameters.get("properties") or {}).items()
    )


MADE_UP = [
    # three levels of objects
    {"a": {"type": "dict", "properties": {"b": {"type": "dict", "properties": {"c": {"type": "float"}}}}}},
    # an array of objects with a required list and an enum inside
    {
        "rows": {
            "type": "array",
            "items": {
                "type": "dict",
                "properties": {
                    "kind": {"type": "string", "enum": ["x", "y"]},
                    "size": {"type": "integer"},
                },
                "required": ["kind"],
            },
        }
    },
    # a tuple of objects
    {"pair": {"type": "tuple", "items": {"type": "dict", "properties": {"k": {"type": "any"}}}}},
    # an array of arrays of objects
    {
        "grid": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "dict", "properties": {"v": {"type": "int"}}}},
        }
    },
    # an object holding an array of enums
    {
        "filter": {
            "type": "dict",
            "properties": {"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}},
            "required": ["tags"],
        }
    },
    # an array of enum strings at the top
    {"modes": {"type": "array", "items": {"type": "string", "enum": ["fast", "slow"]}}},
    # an object whose field is untyped and described
    {"options": {"type": "dict", "properties": {"extra": {"type": "any", "description": "anything"}}}},
]  # fmt: skip


@pytest.mark.parametrize("properties", MADE_UP, ids=[next(iter(p)) for p in MADE_UP])
def test_made_up_nested_parameters_reach_the_model_whole(properties: dict[str, Any]) -> None:
    tool = function_tool(
        {"name": "f.g", "parameters": {"type": "dict", "properties": properties}}, "test"
    )
    assert has_inner_parts(tool)
    assert lost_parts(tool) == set()


def test_a_nested_argument_still_validates_as_an_object() -> None:
    tool = function_tool(
        {"name": "f", "parameters": {"type": "dict", "properties": MADE_UP[1]}}, "t"
    )
    spec = endpoint_spec(tool)
    model = arguments_models({"F": spec.parameters})["F"]
    value = {"rows": [{"kind": "x", "size": 2}]}
    assert model.model_validate(value).model_dump(by_alias=True, exclude_none=True) == value


def test_a_flat_parameter_carries_no_extra_schema() -> None:
    tool = function_tool(
        {"name": "f", "parameters": {"type": "dict", "properties": {"n": {"type": "float"}}}}, "t"
    )
    (param,) = endpoint_spec(tool).parameters
    assert param.json_schema is None
    assert "json_schema" not in param.model_dump_json()


def real_tools(shared_data: Path) -> list[When2CallTool]:
    """Every distinct function of BFCL's single-turn items and When2Call's questions."""
    tasks = load_bfcl(bfcl_source(shared_data / "bfcl"), CATEGORIES)
    tools = [tool for task in tasks for tool in task.functions]
    tools += [tool for task in load_when2call(shared_data) for tool in task.tools]
    unique = {json.dumps(t.model_dump(), sort_keys=True): t for t in tools}
    return list(unique.values())


def test_every_nested_function_of_the_real_data_reaches_the_model_whole(
    shared_data: Path,
) -> None:
    nested = [tool for tool in real_tools(shared_data) if has_inner_parts(tool)]
    # 202 of the 3,147 distinct Python-typed functions lost inner parts before the fix.
    assert len(nested) > 300
    losing = {tool.original: sorted(lost_parts(tool))[:3] for tool in nested if lost_parts(tool)}
    assert losing == {}, f"{len(losing)} of {len(nested)} lose inner parts"
