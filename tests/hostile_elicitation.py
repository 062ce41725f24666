"""The hostile elicitation corpus (``fixtures/hostile/elicitation.jsonl``): each case's params.

A case gives its ``params`` as they are, or names a ``build`` for what
would make the file huge (a schema nested 600 levels, an enum of 100,000
items, a title of a million characters). The tests read the params as a
Python value; the raw MCP server (``mcp_elicit_raw_server.py``) sends them
as JSON text, written by hand where ``json.dumps`` would give up on depth.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aah.desk import ElicitationRequest, FieldValue, fitting_value

CORPUS = Path(__file__).parent / "fixtures" / "hostile" / "elicitation.jsonl"
MESSAGE = "Details?"


def load_cases() -> list[dict[str, Any]]:
    """Every case of the corpus, in its order."""
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _form(properties: Any, **more: Any) -> dict[str, Any]:
    return {
        "message": MESSAGE,
        "requestedSchema": {"type": "object", "properties": properties, **more},
    }


def params_of(case: dict[str, Any]) -> Any:
    """The params ``case`` sends, as a Python value."""
    if "params" in case:
        return case["params"]
    build = case["build"]
    if "nest" in build:
        nested: Any = {"type": "string"}
        for _ in range(build["nest"]):
            nested = {"type": "object", "properties": {"x": nested}}
        return _form({"a": nested})
    if "mode_nest" in build:
        mode: Any = "form"
        for _ in range(build["mode_nest"]):
            mode = [mode]
        return {"message": MESSAGE, "mode": mode}
    return _built(build)


def _built(build: dict[str, Any]) -> Any:
    """Params too big for the corpus file, but not too deep for ``json.dumps``."""
    if "unreadable" in build:
        from aah.desk import unreadable_elicitation

        return unreadable_elicitation(build["unreadable"])
    if "message_chars" in build:
        return {"message": "m" * build["message_chars"], "requestedSchema": {"type": "object"}}
    if "mode_digits" in build:
        return {"message": MESSAGE, "mode": 10 ** build["mode_digits"]}
    if "fields" in build:
        return _form({f"f{i}": {"type": "string"} for i in range(build["fields"])})
    if "enum_items" in build:
        return _form(
            {"x": {"type": "string", "enum": [str(i) for i in range(build["enum_items"])]}}
        )
    if "required" in build:
        names = [f"r{i}" for i in range(build["required"])]
        return _form({"x": {"type": "string"}}, required=names)
    if "name_chars" in build:
        return _form({"n" * build["name_chars"]: {"type": "string"}})
    if "minimum_digits" in build:
        return _form({"x": {"type": "integer", "minimum": 10 ** build["minimum_digits"]}})
    if "default_digits" in build:
        return _form({"x": {"type": "integer", "default": 10 ** build["default_digits"]}})
    if "title_chars" in build:
        return _form({"x": {"type": "string", "title": "T" * build["title_chars"]}})
    if "description_chars" in build:
        return _form({"x": {"type": "string", "description": "D" * build["description_chars"]}})
    if "at_bounds" in build:
        options = [f"{i:03d}" + "o" * 297 for i in range(100)]
        return _form({f"f{i}": {"type": "string", "enum": options} for i in range(30)})
    if "id_keys" in build:
        found = {f"k{i}": i for i in range(build["id_keys"])}
        return {"mode": "url", "message": MESSAGE, "url": "https://e.org/", "elicitationId": found}
    raise ValueError(f"unknown build {build}")


def params_text(case: dict[str, Any]) -> str:
    """The params ``case`` sends, as JSON text (built by hand where it nests deep)."""
    build = case.get("build", {})
    if "nest" in build:
        depth = build["nest"]
        nested = '{"type": "object", "properties": {"x": ' * depth + '{"type": "string"}'
        nested += "}}" * depth
        return f'{{"message": "{MESSAGE}", "requestedSchema": {{"type": "object", "properties": {{"a": {nested}}}}}}}'
    if "mode_nest" in build:
        depth = build["mode_nest"]
        return f'{{"message": "{MESSAGE}", "mode": {"[" * depth}"form"{"]" * depth}}}'
    return json.dumps(params_of(case))


def fitting_content(request: ElicitationRequest) -> dict[str, FieldValue]:
    """A value for every field of ``request`` that the desk takes: what a person could give."""
    content: dict[str, FieldValue] = {}
    for field in request.fields:
        value = fitting_value(field)
        assert value is not None, f"{field.name}: no value fits a form the desk showed"
        content[field.name] = value
    return content
