r"""Spec files holding text the store cannot hold still build, with the damage visible.

A JSON ``\ud800`` escape (a lone surrogate), a YAML ``"\udc80"`` escape or a
NUL in a name, a path, a parameter or a description used to stop ``aah tools
build`` with a traceback (the specs' hash could not encode them). Such text
becomes U+FFFD where the file is read; a well-formed surrogate pair stays
the character it encodes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry

REPLACEMENT = "\ufffd"

# (what, where it sits, the escape): every place a person would name.
OPENAPI_JSON = [
    ("operationId", "lone high", r"get\ud800Thing"),
    ("operationId", "lone low", r"get\udc80Thing"),
    ("operationId", "NUL", r"get\u0000Thing"),
    ("operationId", "reversed pair", r"get\udc00\ud800Thing"),
    ("path", "lone high", r"/things\ud800"),
    ("parameter", "lone high", r"id\ud800"),
    ("description", "lone low", r"Gets a thing \udfff"),
    ("title", "lone high", r"Things \ud800 API"),
    ("enum", "NUL", r"red\u0000"),
]


def _openapi_json(where: str, escape: str) -> str:
    operation_id = escape if where == "operationId" else "getThing"
    path = escape if where == "path" else "/things"
    parameter = escape if where == "parameter" else "id"
    description = escape if where == "description" else "Gets a thing"
    title = escape if where == "title" else "Things"
    enum = escape if where == "enum" else "red"
    # Written by hand: json.dumps would refuse to write the escapes we want.
    return (
        '{"openapi": "3.0.0", "info": {"title": "%s", "version": "1"},'
        ' "servers": [{"url": "https://api.example.org"}],'
        ' "paths": {"%s": {"get": {"operationId": "%s", "description": "%s",'
        ' "parameters": [{"name": "%s", "in": "query", "schema": {"type": "string"}},'
        ' {"name": "colour", "in": "query", "schema": {"type": "string", "enum": ["%s"]}}],'
        ' "responses": {"200": {"description": "ok"}}}}}}'
    ) % (title, path, operation_id, description, parameter, enum)


def _data(tmp_path: Path) -> Path:
    """A data folder with one good Fail-TaLMs tool, so a rejected file leaves a registry."""
    data = tmp_path / "data"
    (data / "openapi").mkdir(parents=True)
    (data / "fail-talms" / "tools" / "Good").mkdir(parents=True)
    good = {
        "tool_name": "good",
        "home_url": "https://good.example.org/",
        "api_list": [{"name": "get_item", "url": "https://good.example.org/item", "method": "GET"}],
    }
    (data / "fail-talms" / "tools" / "Good" / "good.json").write_text(json.dumps(good))
    return data


def _all_text(registry: Registry) -> str:
    specs = [spec.model_dump(mode="json") for spec in registry.endpoints(None)]
    return json.dumps(specs, ensure_ascii=False)


@pytest.mark.parametrize(("where", "kind", "escape"), OPENAPI_JSON, ids=lambda v: str(v))
def test_openapi_json_with_unstorable_text_builds(
    where: str, kind: str, escape: str, tmp_path: Path
) -> None:
    data = _data(tmp_path)
    (data / "openapi" / "things__1.json").write_text(_openapi_json(where, escape))
    report = build_registry(data, tmp_path / "registry.db")
    assert report.rejections == [] or all("surrogate" not in r.reason for r in report.rejections)
    registry = Registry(report.path)
    assert len(registry.endpoints(None)) == 2
    text = _all_text(registry)
    assert not any("\ud800" <= ch <= "\udfff" or ch == "\x00" for ch in text)
    if where != "title":  # the title is not kept; everything else is, visibly damaged
        assert REPLACEMENT in text, text
    assert registry.search("thing", 1)  # the index holds it too


@pytest.mark.parametrize(
    "scalar",
    [r'"\ud800"', r'"\udc80 tail"', r'"head \x00"', r'"\0 nul"', r'"\ud83d\ude00 ok"'],
)
def test_openapi_yaml_with_escaped_text_builds(scalar: str, tmp_path: Path) -> None:
    """YAML forbids surrogate escapes (a rejection naming the file); NUL is replaced."""
    data = _data(tmp_path)
    spec = (
        "openapi: 3.0.0\n"
        "info: {title: t, version: '1'}\n"
        "servers: [{url: 'https://api.example.org'}]\n"
        "paths:\n"
        "  /things:\n"
        "    get:\n"
        "      operationId: listThings\n"
        f"      description: {scalar}\n"
        "      responses: {'200': {description: ok}}\n"
    )
    (data / "openapi" / "things__1.yaml").write_text(spec)
    report = build_registry(data, tmp_path / "registry.db")
    registry = Registry(report.path)
    if r"\u" in scalar:
        (rejection,) = report.rejections
        assert rejection.source.file == "things__1.yaml" and "not valid YAML" in rejection.reason
        return
    endpoint = registry.get("things__listThings")
    assert REPLACEMENT in endpoint.description
    assert "\x00" not in endpoint.description


@pytest.mark.parametrize("field", ["tool_name", "name", "description", "url"])
def test_failtalms_tool_file_with_a_lone_surrogate_builds(field: str, tmp_path: Path) -> None:
    data = _data(tmp_path)
    values = {
        "tool_name": "demo",
        "name": "get_thing",
        "description": "Gets a thing.",
        "url": "https://demo.example.org/thing",
    }
    values[field] = values[field].replace("thing", "th\\ud800ing").replace("demo", "de\\udc80mo")
    text = (
        '{"tool_name": "%(tool_name)s", "home_url": "https://demo.example.org/",'
        ' "api_list": [{"name": "%(name)s", "url": "%(url)s", "method": "GET",'
        ' "description": "%(description)s"}]}'
    ) % values
    (data / "fail-talms" / "tools" / "Good" / "demo.json").write_text(text)
    report = build_registry(data, tmp_path / "registry.db")
    registry = Registry(report.path)
    text_out = _all_text(registry) + json.dumps([r.reason for r in report.rejections])
    assert not any("\ud800" <= ch <= "\udfff" for ch in text_out)
    assert REPLACEMENT in text_out


def _build(data: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aah", "tools", "build", "--data", str(data)],
        env={"AAH_REGISTRY": str(tmp_path / "registry.db"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_folder_whose_every_file_is_rejected_is_one_line(tmp_path: Path) -> None:
    data = _data(tmp_path)
    (data / "fail-talms" / "tools" / "Good" / "good.json").write_text("{not json")
    done = _build(data, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: no endpoint could be imported")
    assert "good.json" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "registry.db").exists()


def test_aah_tools_build_with_unstorable_text_exits_cleanly(tmp_path: Path) -> None:
    data = _data(tmp_path)
    (data / "openapi" / "things__1.json").write_text(
        _openapi_json("operationId", r"get\ud800Thing")
    )
    done = _build(data, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "tool",
    [
        {"name": "get\ud800time", "description": "now"},
        {"name": "get_time", "description": "now \udc80\x00"},
        {"name": "get_time", "inputSchema": {"properties": {"zone\ud800": {"type": "string"}}}},
        {"name": "get_time", "inputSchema": {"properties": {"zone": {"enum": ["UTC\udfff"]}}}},
    ],
)
def test_an_mcp_servers_tool_list_is_made_storable(tool: dict[str, object]) -> None:
    pytest.importorskip("mcp")
    from aah.mcp import McpServer, tool_spec

    spec = tool_spec(McpServer("clock", "clock-server"), tool)
    text = spec.model_dump_json()  # the registry's hash and rows encode exactly this
    assert REPLACEMENT in json.dumps(json.loads(text), ensure_ascii=False)
