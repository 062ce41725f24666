"""The Fail-TaLMs importer on the real data and on a small made-up folder."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from aah.errors import AahError
from aah.tools.importers.failtalms import benchmark_endpoint_name, import_failtalms
from aah.tools.importers.failtalms_repairs import bind_placeholders, read_default, read_type
from aah.tools.spec import EndpointSpec, ImportResult, ParamLocation

MINI = Path(__file__).parent / "fixtures" / "import_failtalms_mini"
NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PLACEHOLDER = re.compile(r"\{([^{}]+)\}")

# Every spelling of a parameter type in the data, and how it is read.
TYPE_SPELLINGS: dict[str, tuple[str, str | None]] = {
    "STRING": ("string", None),
    "string": ("string", None),
    "ENUM": ("string", None),
    "STRING or LIST of STRINGS": ("string", None),
    "INTEGER": ("integer", None),
    "INT": ("integer", None),
    "int": ("integer", None),
    "LONG": ("integer", None),
    "FLOAT": ("number", None),
    "DOUBLE": ("number", None),
    "DECIMAL": ("number", None),
    "NUMBER": ("number", None),
    "BOOLEAN": ("boolean", None),
    "LIST": ("array", None),
    "ARRAY": ("array", None),
    "LIST[INTEGER]": ("array", "integer"),
    "LIST of STRINGS": ("array", "string"),
    "LIST OF STRINGS": ("array", "string"),
    "DICT": ("object", None),
}


@pytest.fixture(scope="module")
def failtalms_root(shared_data: Path) -> Path:
    return shared_data / "fail-talms"


@pytest.fixture(scope="module")
def imported(failtalms_root: Path) -> ImportResult:
    return import_failtalms(failtalms_root)


@pytest.fixture(scope="module")
def by_name(imported: ImportResult) -> dict[str, EndpointSpec]:
    return {spec.qualified_name: spec for spec in imported.endpoints}


def _param(spec: EndpointSpec, name: str) -> Any:
    param = spec.parameter(name)
    assert param is not None, f"{spec.qualified_name} has no parameter {name!r}"
    return param


def test_counts_857_endpoints_and_the_ask_human_rejection(imported: ImportResult) -> None:
    assert len(imported.endpoints) == 857
    assert Counter(spec.method for spec in imported.endpoints) == {"GET": 835, "POST": 22}
    [rejection] = imported.rejections
    assert rejection.source.file == "tools/HumanInteract/humaninteract.json"
    assert rejection.name == "interact_with_human"
    assert "ask-the-human" in rejection.reason
    assert "ask_human" in rejection.reason


def test_qualified_names_are_unique_and_fit_function_names(imported: ImportResult) -> None:
    names = [spec.qualified_name for spec in imported.endpoints]
    assert len(set(names)) == len(names)
    assert all(NAME_RULE.match(name) for name in names)


def test_names_repeated_across_tools_stay_apart(by_name: dict[str, EndpointSpec]) -> None:
    gemini, kucoin = by_name["gemini__get_ticker"], by_name["kucoin__get_ticker"]
    assert gemini.name == kucoin.name == "get_ticker"
    assert gemini.host == "api.gemini.com"
    assert kucoin.host == "api.kucoin.com"


def test_source_category_and_tool_name(by_name: dict[str, EndpointSpec]) -> None:
    spec = by_name["seventimer__get_graphical_forecast"]
    assert spec.category == "Weather"
    assert spec.source.kind == "fail-talms"
    assert spec.source.file == "tools/Weather/seventimer.json"
    assert spec.source.id == "get_graphical_forecast"
    # The name inside the file wins over the file stem (jikan.json says "Jikan").
    assert "Jikan__get_anime_by_id" in by_name


def test_bare_string_parameters_become_required_strings(
    by_name: dict[str, EndpointSpec],
) -> None:
    spec = by_name["spacex__query_capsules"]
    for name in ("query", "options"):
        param = _param(spec, name)
        assert (param.type, param.required, param.location) == ("string", True, "body")
    assert f"parameter {'query'!r} given as a bare name: read as a required string" in spec.repairs
    bare = sum("given as a bare name" in note for s in by_name.values() for note in s.repairs)
    assert bare == 33


def test_every_type_spelling_in_the_data_is_known(failtalms_root: Path) -> None:
    spellings: set[str] = set()
    for path in failtalms_root.glob("tools/*/*.json"):
        for entry in json.loads(path.read_text(encoding="utf-8"))["api_list"]:
            for key in ("required_parameters", "optional_parameters"):
                spellings.update(p["type"] for p in entry.get(key) or [] if isinstance(p, dict))
    assert spellings == set(TYPE_SPELLINGS)


@pytest.mark.parametrize(("spelling", "expected"), list(TYPE_SPELLINGS.items()))
def test_type_spelling_is_read_as_json_type(spelling: str, expected: tuple[str, Any]) -> None:
    reading = read_type(spelling)
    assert (reading.type, reading.items_type) == expected
    # Only spellings that are JSON-schema types in another case need no note.
    json_types = {"string", "integer", "number", "boolean", "array", "object"}
    assert bool(reading.note) == (spelling.lower() not in json_types)


def test_type_spellings_on_real_endpoints(by_name: dict[str, EndpointSpec]) -> None:
    assert _param(by_name["nexchange__get_price"], "amount_base").type == "number"  # DOUBLE
    assert _param(by_name["wazirx__klines"], "start_time").type == "integer"  # LONG
    objects = _param(by_name["metmuseum__get_objects"], "departmentIds")  # LIST[INTEGER]
    assert (objects.type, objects.items_type) == ("array", "integer")
    tags = _param(by_name["makeup__search_makeup_products"], "product_tags")  # LIST of STRINGS
    assert (tags.type, tags.items_type) == ("array", "string")
    assert _param(by_name["quotable__list_quotes"], "sortBy").type == "string"  # ENUM
    assert _param(by_name["usaspending__search_spending_by_award"], "filters").type == "object"


def test_defaults_are_typed_where_they_parse(by_name: dict[str, EndpointSpec]) -> None:
    forecast = by_name["seventimer__get_graphical_forecast"]
    assert _param(forecast, "ac").default == 0
    assert _param(forecast, "lang").default == "en"
    assert _param(by_name["openmeteo__get_weather_forecast"], "hourly").default is None
    assert read_default("x", "yes", "boolean") == ("yes", "")


def test_missing_placeholder_is_declared_as_required_path_parameter(
    by_name: dict[str, EndpointSpec],
) -> None:
    spec = by_name["officaljoke__grab_jokes_by_type"]
    assert spec.url_template == "https://official-joke-api.appspot.com/jokes/{type}/{random_ten}"
    declared = _param(spec, "random_ten")
    assert (declared.location, declared.required) == (ParamLocation.PATH, True)
    assert declared.enum == ["random", "ten"]
    assert (
        "parameter 'random_ten' declared: URL placeholder missing from parameters" in spec.repairs
    )


def test_placeholder_named_differently_is_bound_to_its_parameter(
    by_name: dict[str, EndpointSpec],
) -> None:
    holidays = by_name["nagerdate__public_holidays"]
    assert holidays.url_template.endswith("/publicholidays/{year}/{country_code}")
    assert _param(holidays, "country_code").location == ParamLocation.PATH
    show = by_name["tvmaze__show_main_information"]
    assert show.url_template == "https://api.tvmaze.com/shows/{show_id}"
    assert [p.name for p in show.parameters] == ["show_id"]


def test_colon_placeholders_and_query_templates(by_name: dict[str, EndpointSpec]) -> None:
    capsule = by_name["spacex__get_capsule_by_id"]
    assert capsule.url_template == "https://api.spacexdata.com/v4/capsules/{capsule_id}"
    ticker = by_name["kucoin__get_ticker"]
    assert ticker.url_template == "https://api.kucoin.com/api/v1/market/orderbook/level1"
    assert _param(ticker, "symbol").location == ParamLocation.QUERY


def test_path_placeholders_and_path_parameters_match(imported: ImportResult) -> None:
    for spec in imported.endpoints:
        placeholders = set(PLACEHOLDER.findall(spec.url_template))
        path_params = {p.name for p in spec.parameters if p.location == ParamLocation.PATH}
        assert placeholders == path_params, spec.qualified_name
        assert all(p.required for p in spec.parameters if p.location == ParamLocation.PATH)
        assert spec.url_template.startswith(("http://", "https://")), spec.qualified_name


def test_post_parameters_go_in_the_body(imported: ImportResult) -> None:
    for spec in imported.endpoints:
        if spec.method == "POST":
            assert all(p.location in ("body", "path") for p in spec.parameters)


def test_get_or_post_is_read_as_get(by_name: dict[str, EndpointSpec]) -> None:
    spec = by_name["quickchart__generate_chart"]
    assert spec.method == "GET"
    assert "method 'GET or POST' read as GET" in spec.repairs
    assert all(p.location == ParamLocation.QUERY for p in spec.parameters)


def test_relative_urls_are_joined_to_the_home_url(by_name: dict[str, EndpointSpec]) -> None:
    spec = by_name["pmtwentyfive__get_device_latest"]
    assert spec.url_template == "https://pm25.lass-net.org/API-1.0.0/device/{device_id}/latest/"


def test_response_sketches(by_name: dict[str, EndpointSpec]) -> None:
    example = by_name["hackernews__get_item"].response
    assert (example.kind, example.content["by"]) == ("example", "dhouston")
    assert by_name["seventimer__get_graphical_forecast"].response.kind == "template"
    assert by_name["kucoin__get_ticker"].response.kind == "schema"
    # No body or schema in the tool file: the benchmark's template is used.
    assert by_name["nagerdate__public_holidays"].response.kind == "template"
    assert by_name["coinpaprika__redirect_to_ticker_by_contract"].response.status == 301


def test_every_benchmark_api_resolves_to_an_endpoint(
    failtalms_root: Path, by_name: dict[str, EndpointSpec]
) -> None:
    files = sorted(failtalms_root.glob("benchmark/*/all_*_queries.json"))
    assert len(files) == 5
    seen, missing = 0, set()
    for path in files:
        for query in json.loads(path.read_text(encoding="utf-8")):
            for item in query["api_list"]:
                seen += 1
                name = benchmark_endpoint_name(item["tool_name"], item["api_name"])
                if name not in by_name:
                    missing.add(name)
                elif item.get("category_name"):
                    assert by_name[name].category == item["category_name"]
    assert seen == 2841
    assert missing == set()


def test_benchmark_names_that_differ_from_tool_names() -> None:
    assert benchmark_endpoint_name("jobicy", "get_rss_feed") == "remotejobs__get_rss_feed"
    assert benchmark_endpoint_name("DnD5", "get_equipment") == "dnd5__get_equipment"
    assert benchmark_endpoint_name("coinlore", "get_all_exchanges") == "coinlore__get_all_exchanges"


def test_mini_folder_repairs_and_rejections() -> None:
    result = import_failtalms(MINI)
    specs = {spec.qualified_name: spec for spec in result.endpoints}
    assert sorted(specs) == ["demo__lookup", "demo__lookup_2", "demo__submit"]
    second = specs["demo__lookup_2"]
    assert "endpoint name 'lookup' repeats within tool 'demo': renamed 'lookup_2'" in second.repairs
    assert second.url_template == "https://demo.example.org/api/things/{thing}"
    assert second.response.kind == "none"
    # The most frequent benchmark template wins.
    assert specs["demo__lookup"].response.content == {"name": "str", "size": "int"}
    submit = specs["demo__submit"]
    assert (submit.response.kind, submit.response.status) == ("schema", 201)
    assert _param(submit, "ratio").default == 0.5
    reasons = {(r.source.file, r.name): r.reason for r in result.rejections}
    assert reasons == {
        ("tools/Demo/broken.json", ""): (
            "not valid JSON (Expecting value: line 2 column 1 (char 38))"
        ),
        (
            "tools/Demo/demo.json",
            "ftp_only",
        ): "URL 'ftp://demo.example.org/file' is not an http(s) URL",
        ("tools/Demo/demo.json", "erase"): (
            "method 'PURGE' is not one of GET, POST, PUT, PATCH, DELETE"
        ),
        ("tools/Demo/demo.json", ""): "entry is not an object with a name",
    }


def test_missing_tools_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="no Fail-TaLMs tools folder"):
        import_failtalms(tmp_path)


def test_binding_prefers_exact_names_over_fuzzy_ones() -> None:
    bound = bind_placeholders(["id", "type"], ["view_type", "id"], ["id"])
    assert bound == {"id": "id", "type": "view_type"}
    assert bind_placeholders(["id"], ["show_id", "season_id"], []) == {}
