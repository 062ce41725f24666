"""The OpenAPI / Swagger 2 importer on the real specs and on made-up ones."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from aah.errors import AahError
from aah.tools.importers.openapi import import_openapi, import_openapi_file, tool_name_for
from aah.tools.importers.openapi_refs import RefError, deref, inline
from aah.tools.spec import EndpointSpec, ImportResult, ParamLocation

SPECS = Path(__file__).parent / "fixtures" / "import_openapi_specs"
NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# Operations per spec, as in the data folder's SOURCE.md (wikimedia: 9 GET + 1 POST).
PER_SPEC = {
    "xkcd_com": 2,
    "randomlovecraft_com": 4,
    "apis_guru": 7,
    "wikimedia_org": 10,
    "healthcare_gov": 16,
    "parliament_uk_erskine-may": 11,
    "parliament_uk_treaties": 6,
    "parliament_uk_members": 43,
}


@pytest.fixture(scope="module")
def imported(shared_data: Path) -> ImportResult:
    return import_openapi(shared_data / "openapi")


@pytest.fixture(scope="module")
def by_name(imported: ImportResult) -> dict[str, EndpointSpec]:
    return {spec.qualified_name: spec for spec in imported.endpoints}


@pytest.fixture(scope="module")
def secured() -> dict[str, EndpointSpec]:
    result = import_openapi_file(SPECS / "example.org_secured__1.0.yaml")
    return {spec.qualified_name: spec for spec in result.endpoints}


def test_counts_99_operations_98_get_1_post(imported: ImportResult) -> None:
    assert imported.rejections == []
    assert len(imported.endpoints) == 99
    assert Counter(spec.method for spec in imported.endpoints) == {"GET": 98, "POST": 1}


def test_per_spec_counts_match_the_source_table(imported: ImportResult) -> None:
    assert Counter(spec.tool for spec in imported.endpoints) == PER_SPEC


def test_qualified_names_are_unique_and_fit_function_names(imported: ImportResult) -> None:
    names = [spec.qualified_name for spec in imported.endpoints]
    assert len(set(names)) == len(names)
    assert all(NAME_RULE.match(name) for name in names)
    assert all("__" not in spec.name for spec in imported.endpoints)


def test_tool_names_and_sources() -> None:
    assert tool_name_for(Path("parliament.uk_members__v1.yaml")) == "parliament_uk_members"
    assert tool_name_for(Path("xkcd.com__1.0.0.yaml")) == "xkcd_com"


def test_parliament_base_urls_come_from_x_origin(imported: ImportResult) -> None:
    hosts = {spec.tool: spec.base_url for spec in imported.endpoints if "parliament" in spec.tool}
    assert hosts == {
        "parliament_uk_erskine-may": "https://erskinemay-api.parliament.uk",
        "parliament_uk_treaties": "https://treaties-api.parliament.uk",
        "parliament_uk_members": "https://members-api.parliament.uk",
    }


def test_servers_url_is_the_base(by_name: dict[str, EndpointSpec]) -> None:
    spec = by_name["apis_guru__getAPI"]
    assert spec.url_template == "https://api.apis.guru/v2/specs/{provider}/{api}.json"
    assert (spec.source.kind, spec.source.file, spec.source.id) == (
        "openapi",
        "apis.guru__2.2.0.yaml",
        "getAPI",
    )
    assert spec.category == "OpenData"
    xkcd = by_name["xkcd_com__get_comicId_info_0_json"]
    assert xkcd.url_template == "http://xkcd.com/{comicId}/info.0.json"
    assert xkcd.source.id == "GET /{comicId}/info.0.json"


def test_parameter_refs_are_resolved(by_name: dict[str, EndpointSpec]) -> None:
    spec = by_name["apis_guru__getServiceAPI"]
    assert [(p.name, p.location, p.required) for p in spec.parameters] == [
        ("provider", ParamLocation.PATH, True),
        ("service", ParamLocation.PATH, True),
        ("api", ParamLocation.PATH, True),
    ]
    location_type = by_name["parliament_uk_members__get_api_Location_Browse_location_4f73ab4e"]
    param = location_type.parameter("locationType")
    assert param is not None
    assert (param.type, param.enum) == ("integer", [0, 1, 2, 3])


def test_response_schema_refs_are_inlined(by_name: dict[str, EndpointSpec]) -> None:
    sketch = by_name["apis_guru__listAPIs"].response
    assert sketch.kind == "schema"
    assert "$ref" not in json.dumps(sketch.content)
    versions = sketch.content["additionalProperties"]["properties"]["versions"]
    assert versions["type"] == "object"
    # Dates in examples stay text, so every sketch is plain JSON.
    assert "2015-02-22T20:00:45.000Z" in json.dumps(sketch.content)


def test_path_level_parameters_are_merged(by_name: dict[str, EndpointSpec]) -> None:
    spec = by_name["randomlovecraft_com__get-sentences-from-book"]
    assert [(p.name, p.location) for p in spec.parameters] == [
        ("id", ParamLocation.PATH),
        ("limit", ParamLocation.QUERY),
    ]
    limit = spec.parameter("limit")
    assert limit is not None and (limit.type, limit.default) == ("integer", 1)


def test_wikimedia_public_post_has_a_body_parameter(by_name: dict[str, EndpointSpec]) -> None:
    spec = by_name["wikimedia_org__post_media_math_check_type"]
    assert spec.method == "POST"
    formula = spec.parameter("q")
    assert formula is not None
    assert (formula.location, formula.required) == (ParamLocation.BODY, True)
    kind = spec.parameter("type")
    assert kind is not None and kind.enum == ["tex", "inline-tex", "chem"]


def test_auth_requiring_operations_are_rejected() -> None:
    result = import_openapi_file(SPECS / "example.org_secured__1.0.yaml")
    reasons = {r.name: r.reason for r in result.rejections}
    assert reasons["getSecret"] == "requires auth (api_key)"
    assert reasons["headPublic"] == "method HEAD is not one aah calls"
    assert "points outside the document" in reasons["get_elsewhere"]
    assert len(result.rejections) == 3


def test_security_overrides_and_optional_auth(secured: dict[str, EndpointSpec]) -> None:
    # `security: []` and an empty requirement among the alternatives mean no auth.
    assert {"example_org_secured__getPublic", "example_org_secured__getMaybe"} <= set(secured)


def test_relative_server_url_and_variables(secured: dict[str, EndpointSpec]) -> None:
    spec = secured["example_org_secured__getPublic"]
    assert spec.url_template == "https://api.example.org/v2/public/{id}"
    assert spec.category == "DeveloperTools"


def test_operation_parameters_override_path_level_and_auth_headers_drop(
    secured: dict[str, EndpointSpec],
) -> None:
    spec = secured["example_org_secured__getPublic"]
    assert [(p.name, p.location) for p in spec.parameters] == [
        ("id", ParamLocation.PATH),
        ("lang", ParamLocation.QUERY),
        ("X-Trace", ParamLocation.HEADER),
    ]
    lang = spec.parameter("lang")
    assert lang is not None and lang.enum == ["en", "fr"]
    assert any("X-Api-Key" in note for note in spec.repairs)


def test_recursive_schema_is_cut(secured: dict[str, EndpointSpec]) -> None:
    sketch = secured["example_org_secured__getPublic"].response
    children = sketch.content["properties"]["children"]
    assert children["items"] == {"description": "(recursive: #/components/schemas/Node)"}


def test_request_body_and_duplicate_operation_ids(secured: dict[str, EndpointSpec]) -> None:
    create = secured["example_org_secured__createItem"]
    assert [(p.name, p.required, p.location) for p in create.parameters] == [
        ("title", True, ParamLocation.BODY),
        ("tags", False, ParamLocation.BODY),
    ]
    assert (create.response.kind, create.response.status) == ("schema", 201)
    again = secured["example_org_secured__createItem_2"]
    assert any("repeats within tool" in note for note in again.repairs)
    maybe = secured["example_org_secured__getMaybe"].response
    # YAML 1.1 would read `yes` as True; spec scalars are read as in JSON.
    assert (maybe.kind, maybe.content) == ("example", {"maybe": "yes"})


def test_swagger2_spec() -> None:
    result = import_openapi_file(SPECS / "example.com_pets__2.0.yaml")
    specs = {spec.name: spec for spec in result.endpoints}
    get_pet = specs["getPet"]
    assert get_pet.url_template == "https://pets.example.com/v1/pets/{petId}"
    fields = get_pet.parameter("fields")
    assert fields is not None and (fields.type, fields.items_type) == ("array", "string")
    category = get_pet.response.content["properties"]["category"]
    assert category == {"type": "object", "properties": {"label": {"type": "string"}}}
    add_pet = specs["addPet"]
    assert [(p.name, p.required, p.location) for p in add_pet.parameters] == [
        ("id", False, ParamLocation.BODY),
        ("name", True, ParamLocation.BODY),
        ("category", False, ParamLocation.BODY),
    ]
    assert add_pet.response.kind == "example"
    caption = specs["uploadPhoto"].parameter("caption")
    assert caption is not None and caption.location == ParamLocation.BODY
    assert [(r.name, r.reason) for r in result.rejections] == [("wipe", "requires auth (token)")]


def test_malformed_yaml_is_one_rejection(tmp_path: Path) -> None:
    bad = tmp_path / "broken.example__1.yaml"
    bad.write_text("openapi: 3.0.0\npaths: {\n  /x: [unclosed\n", encoding="utf-8")
    result = import_openapi_file(bad)
    assert result.endpoints == []
    [rejection] = result.rejections
    assert rejection.tool == "broken_example"
    assert rejection.source.file == "broken.example__1.yaml"
    assert rejection.reason.startswith("not valid YAML")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("- just\n- a list\n", "not an OpenAPI document"),
        ("openapi: 1.0\npaths: {}\n", "neither OpenAPI 3 nor Swagger 2.0"),
        ("openapi: 3.0.0\n", "has no 'paths' mapping"),
        ("openapi: 3.0.0\npaths: {}\n", "no servers and no x-origin URL"),
    ],
)
def test_unusable_documents_are_rejected(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "odd__1.yaml"
    path.write_text(text, encoding="utf-8")
    [rejection] = import_openapi_file(path).rejections
    assert rejection.reason.startswith(reason)


def test_folder_import_reads_every_spec_file() -> None:
    result = import_openapi(SPECS)
    assert {spec.tool for spec in result.endpoints} == {"example_com_pets", "example_org_secured"}


def test_missing_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="no OpenAPI folder"):
        import_openapi(tmp_path / "absent")


def test_ref_helpers() -> None:
    doc = {"a": {"$ref": "#/b"}, "b": {"$ref": "#/c~1d"}, "c/d": {"type": "string"}}
    assert deref(doc, doc["a"]) == {"type": "string"}
    loop = {"x": {"$ref": "#/x"}}
    with pytest.raises(RefError):
        deref(loop, loop["x"])
    deep = {"type": "object", "properties": {"p": {"type": "object", "properties": {}}}}
    assert inline({}, deep, max_depth=1) == {"type": "object", "properties": {}}


def test_host_and_hop_by_hop_headers_are_left_out_with_a_note() -> None:
    result = import_openapi_file(
        Path(__file__).parent / "fixtures" / "bad_specs" / "good" / "openapi" / "good__1.yaml"
    )
    (spec,) = result.endpoints
    assert [(p.name, p.location) for p in spec.parameters] == [
        ("id", ParamLocation.PATH),
        ("X-Trace", ParamLocation.HEADER),
    ]
    note = "left out: the host and connection headers are the HTTP layer's"
    assert f"header 'Host' {note}" in spec.repairs
    assert f"header 'Transfer-Encoding' {note}" in spec.repairs


def test_odd_media_type_keys_are_read_as_text() -> None:
    spec_file = "bad_specs/good/openapi/media_type_not_text__1.yaml"
    result = import_openapi_file(Path(__file__).parent / "fixtures" / spec_file)
    (spec,) = result.endpoints
    assert (spec.response.kind, spec.response.media_type, spec.response.content) == (
        "example",
        "1",
        1,
    )


def test_a_long_ref_is_cut_in_its_rejection_reason() -> None:
    with pytest.raises(RefError) as raised:
        deref({}, {"$ref": "http://evil.example/" + "a" * 5000})
    assert len(str(raised.value)) < 200
    assert str(raised.value).endswith("...' points outside the document")
