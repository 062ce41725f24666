"""A corpus of hostile and broken spec files: none may take the registry build down.

Every file under tests/fixtures/bad_specs/openapi and .../fail-talms/tools/Bad
is broken in one way; each must become exactly one rejection naming it, with
its reason, while the good files beside them still build. Files too large or
too deep to keep in the repository are generated into tmp_path.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aah.tools.importers import loading
from aah.tools.importers.failtalms import import_failtalms
from aah.tools.importers.loading import (
    DEFAULT_MAX_SPEC_BYTES,
    MAX_EXPANDED_NODES,
    SpecFileError,
    check_bounds,
)
from aah.tools.importers.openapi import import_openapi_file
from aah.tools.importers.openapi_refs import RefError, inline
from aah.tools.registry.build import build_registry
from aah.tools.spec import ImportResult

BAD_SPECS = Path(__file__).parent / "fixtures" / "bad_specs"
GOOD = BAD_SPECS / "good"
LEVELS = 10_000
# libyaml's composer recurses in C: at this depth it crashes the process.
YAML_LEVELS = 200_000

# Each bad file (relative to bad_specs/) and words its one rejection must hold.
BAD_FILES = {
    "openapi/billion_laughs__1.yaml": "expands past 2,000,000 nodes through YAML aliases",
    "openapi/allof_alias_bomb__1.yaml": "expands past 2,000,000 nodes through YAML aliases",
    "openapi/yaml_alias_cycle__1.yaml": "a YAML alias is used inside itself",
    "openapi/ref_bomb__1.json": "a schema expands past 20,000 nodes through $ref",
    "openapi/allof_self_ref__1.yaml": "allOf/oneOf/anyOf refers back to the schema itself",
    "openapi/not_utf8__1.yaml": "is not UTF-8 text (byte 0xe9 at offset 33)",
    "openapi/ref_loop_schema__1.yaml": "$ref '#/components/schemas/A' refers back to itself",
    "openapi/ref_loop_path_item__1.yaml": "path item: $ref '#/paths/~1loop' refers back to itself",
    "openapi/ref_missing__1.yaml": "$ref '#/components/parameters/Nowhere' points at nothing",
    "openapi/ref_external_file__1.yaml": "$ref 'file:///etc/passwd#/limit' points outside",
    "openapi/ref_external_http__1.yaml": "path item: $ref 'http://evil.example/paths.yaml#/things'",
    "openapi/top_level_list__1.yaml": "no mapping at the top",
    "openapi/empty__1.yaml": "no mapping at the top",
    "openapi/invalid_json__1.json": "not valid JSON",
    "openapi/paths_not_object__1.yaml": "has no 'paths' mapping",
    "openapi/no_operations__1.yaml": "has no operations under 'paths'",
    "openapi/parameters_not_list__1.yaml": "the operation's 'parameters' is not a list",
    "openapi/server_without_host__1.yaml": "server URL 'https:///v1' is relative",
    "openapi/server_file_scheme__1.yaml": "base URL 'file:///etc' is not an http(s) URL",
    "openapi/server_ftp_scheme__1.yaml": "base URL 'ftp://files.example.org/pub' is not an http(s)",
    "openapi/swagger2_numeric_version__1.yaml": "neither OpenAPI 3 nor Swagger 2.0",
    "openapi/swagger2_scheme_string__1.yaml": "base URL 'ftp://api.example.org' is not an http(s)",
    "openapi/swagger2_body_without_schema__1.yaml": "body parameter is not an object",
    "openapi/clash__1.yaml": "name 'clash__get_thing' is already the fail-talms endpoint",
    "openapi/path_item_not_mapping__1.yaml": "path item is not a mapping",
    "openapi/required_not_list__1.yaml": (
        "has a shape aah cannot read (TypeError: 'int' object is not iterable)"
    ),
    "fail-talms/tools/Bad/api_list_object.json": "not a tool description (no api_list list)",
    "fail-talms/tools/Bad/entry_not_object.json": "entry is not an object with a name",
    "fail-talms/tools/Bad/not_json.json": "not valid JSON (Expecting value",
    "fail-talms/tools/Bad/top_level_list.json": "no JSON object at the top",
}


def _deep_json(path: Path) -> None:
    head = (
        '{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, '
        '"servers": [{"url": "https://api.example.org"}], '
        '"paths": {"/x": {"get": {"operationId": "x"}}}, "x-deep": '
    )
    path.write_text(head + "[" * LEVELS + "]" * LEVELS + "}\n")


def _deep_yaml(path: Path) -> None:
    head = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/x: {get: {}}}\nx-deep: "
    path.write_text(head + "{a: " * YAML_LEVELS + "1" + "}" * YAML_LEVELS + "\n")


def _huge_yaml(path: Path) -> None:
    # Valid YAML (comments) just over the cap: the YAML parser would take
    # minutes over it, so it must be refused before it is read.
    line = b"# " + b"x" * 97 + b"\n"
    path.write_bytes(b"openapi: 3.0.0\n" + line * (DEFAULT_MAX_SPEC_BYTES // len(line) + 1))


def _deep_tool_file(path: Path) -> None:
    path.write_text('{"tool_name": "deep", "api_list": ' + "[" * LEVELS + "]" * LEVELS + "}\n")


GENERATED: dict[str, tuple[Callable[[Path], None], str]] = {
    "openapi/deep_json__1.json": (_deep_json, "nests deeper than 100 levels"),
    "openapi/deep_yaml__1.yaml": (_deep_yaml, "nests deeper than 100 levels"),
    "openapi/huge__1.yaml": (_huge_yaml, "over the 20,000,000-byte cap on a spec file"),
    "fail-talms/tools/Bad/deep.json": (_deep_tool_file, "nests deeper than 100 levels"),
}


def _good_endpoints() -> set[str]:
    return {"clash__get_thing", "good__getThing", "media_type_not_text__listThings"}


def test_the_corpus_is_complete() -> None:
    on_disk = {
        path.relative_to(BAD_SPECS).as_posix()
        for folder in ("openapi", "fail-talms")
        for path in (BAD_SPECS / folder).rglob("*")
        if path.is_file()
    }
    assert on_disk == set(BAD_FILES)
    assert len(BAD_FILES) + len(GENERATED) >= 20


def _import_one(relative: str, path: Path) -> ImportResult:
    if relative.startswith("openapi/"):
        return import_openapi_file(path)
    root = path.parents[2]
    return import_failtalms(root)


def _one_rejection(result: ImportResult, name: str, reason: str) -> None:
    assert result.endpoints == []
    assert len(result.rejections) == 1, result.rejections
    rejection = result.rejections[0]
    assert rejection.source.file.endswith(name)
    assert reason in rejection.reason


@pytest.mark.parametrize("relative", sorted(set(BAD_FILES) - {"openapi/clash__1.yaml"}))
def test_each_bad_file_is_one_rejection_with_its_reason(relative: str, tmp_path: Path) -> None:
    path = tmp_path / relative
    path.parent.mkdir(parents=True)
    shutil.copy(BAD_SPECS / relative, path)
    _one_rejection(_import_one(relative, path), path.name, BAD_FILES[relative])


@pytest.mark.parametrize("relative", sorted(GENERATED))
def test_each_generated_bad_file_is_one_rejection(relative: str, tmp_path: Path) -> None:
    path = tmp_path / relative
    path.parent.mkdir(parents=True)
    make, reason = GENERATED[relative]
    make(path)
    started = time.perf_counter()
    _one_rejection(_import_one(relative, path), path.name, reason)
    assert time.perf_counter() - started < 5


def test_the_size_cap_can_be_changed(tmp_path: Path) -> None:
    spec = GOOD / "openapi" / "good__1.yaml"
    capped = import_openapi_file(spec, max_bytes=100)
    _one_rejection(capped, spec.name, "over the 100-byte cap")
    assert import_openapi_file(spec, max_bytes=spec.stat().st_size).endpoints


def _data_dir(where: Path) -> Path:
    shutil.copytree(GOOD, where)
    for relative in BAD_FILES:
        (where / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(BAD_SPECS / relative, where / relative)
    for relative, (make, _) in GENERATED.items():
        make(where / relative)
    return where


_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    # A bomb that got through must fail here, not exhaust the machine.
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
    from aah.tools.registry.build import build_registry
    data = Path(sys.argv[1])
    started = time.perf_counter()
    report = build_registry(data, data / "registry.db")
    print(json.dumps({
        "endpoints": report.endpoints,
        "rejections": [[r.source.kind, r.source.file, r.reason] for r in report.rejections],
        "seconds": time.perf_counter() - started,
        "rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }))
    """
)


def test_all_bad_files_together_build_fast_and_small(tmp_path: Path) -> None:
    data = _data_dir(tmp_path / "data")
    started = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(data)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    wall = time.monotonic() - started
    assert child.returncode == 0, child.stderr[-2000:]
    report = json.loads(child.stdout)
    for relative, reason in {**BAD_FILES, **{k: v[1] for k, v in GENERATED.items()}}.items():
        name = Path(relative).name
        naming = [r for r in report["rejections"] if Path(r[1]).name == name]
        assert len(naming) == 1, (relative, naming)
        assert reason in naming[0][2]
    assert len(report["rejections"]) == len(BAD_FILES) + len(GENERATED)
    assert report["endpoints"] == len(_good_endpoints())
    assert report["rss_kib"] < 1024 * 1024
    assert wall < 10, wall


def test_good_files_beside_the_bad_ones_build(tmp_path: Path) -> None:
    data = _data_dir(tmp_path / "data")
    (data / "openapi" / "huge__1.yaml").unlink()
    from aah.tools.registry.read import Registry

    report = build_registry(data, tmp_path / "registry.db")
    registry = Registry(report.path)
    assert {spec.qualified_name for spec in registry.endpoints(None)} == _good_endpoints()
    assert registry.get("clash__get_thing").source.kind == "fail-talms"


def test_alias_expansion_is_measured_without_expanding() -> None:
    leaf = ["lol"] * 10
    tree: object = leaf
    for _ in range(9):
        tree = [tree] * 10  # 10**10 nodes once expanded, 100 containers shared
    started = time.perf_counter()
    with pytest.raises(SpecFileError, match="expands past"):
        check_bounds({"x": tree})
    assert time.perf_counter() - started < 1
    shared = {"a": leaf, "b": leaf}  # a shared node below the cap is fine
    check_bounds(shared)
    assert MAX_EXPANDED_NODES >= 1_000_000


def test_a_cycle_is_refused() -> None:
    loop: dict[str, object] = {}
    loop["child"] = [loop]
    with pytest.raises(SpecFileError, match="used inside itself"):
        check_bounds({"x": loop})


def test_ref_fan_out_is_bounded_by_total_size() -> None:
    schemas = {f"L{n}": {"allOf": [{"$ref": f"#/s/L{n + 1}"}] * 10} for n in range(8)}
    document = {"s": {**schemas, "L8": {"type": "string"}}}
    with pytest.raises(RefError, match="expands past 500 nodes"):
        inline(document, {"$ref": "#/s/L0"}, max_nodes=500)
    assert inline(document, {"$ref": "#/s/L7"}, max_nodes=500) == {
        "allOf": [{"type": "string"}] * 10
    }


@pytest.mark.parametrize("parser", ["libyaml", "python"])
@pytest.mark.parametrize(
    ("relative", "reason"),
    [
        ("openapi/billion_laughs__1.yaml", "expands past"),
        ("openapi/yaml_alias_cycle__1.yaml", "used inside itself"),
        ("openapi/not_utf8__1.yaml", "is not UTF-8 text"),
    ],
)
def test_both_yaml_parsers_hold_the_bounds(
    parser: str, relative: str, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PyYAML without libyaml falls back to its pure-Python parser.
    if parser == "python":
        monkeypatch.setattr(loading, "_FastSpecLoader", None)
    elif loading._FastSpecLoader is None:
        pytest.skip("this PyYAML has no libyaml")
    _one_rejection(import_openapi_file(BAD_SPECS / relative), Path(relative).name, reason)
    deep = tmp_path / "deep__1.yaml"
    _deep_yaml(deep)
    _one_rejection(import_openapi_file(deep), deep.name, "nests deeper than 100 levels")
    good = import_openapi_file(GOOD / "openapi" / "good__1.yaml")
    assert [spec.qualified_name for spec in good.endpoints] == ["good__getThing"]


def test_a_pipe_named_like_a_spec_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    pipe = tmp_path / "pipe__1.yaml"
    os.mkfifo(pipe)
    _one_rejection(import_openapi_file(pipe), pipe.name, "is not a regular file")
