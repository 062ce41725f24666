import json
import time
from pathlib import Path

import pytest

from aah.config import project_root
from aah.errors import AahError
from aah.tools.registry.build import build_registry
from aah.tools.registry.read import Registry, name_words

FIXES = project_root() / "tool_registry" / "fixes.yaml"


@pytest.fixture(scope="module")
def built(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    path = tmp_path_factory.mktemp("reg") / "registry.db"
    report = build_registry(shared_data, path, FIXES)
    return path, report


@pytest.fixture(scope="module")
def registry(built: tuple[Path, object]) -> Registry:
    return Registry(built[0])


def test_build_counts_and_documented_rejects(built: tuple[Path, object]) -> None:
    report = built[1]
    assert report.endpoints == 956  # type: ignore[attr-defined]
    assert report.by_source == {"fail-talms": 857, "openapi": 99}  # type: ignore[attr-defined]
    rejects = report.rejections  # type: ignore[attr-defined]
    assert [r.name for r in rejects] == ["interact_with_human"]
    assert all(r.reason for r in rejects)
    assert len(report.fixes_applied) == 17  # type: ignore[attr-defined]


def test_registry_lookups(registry: Registry) -> None:
    assert len(registry) == 956
    spec = registry.get("openmeteo__get_weather_forecast")
    assert spec.host == "api.open-meteo.com"
    assert "openmeteo__get_weather_forecast" in registry
    assert registry.categories()["Weather"] >= 10
    assert len(registry.registry_hash) == 64
    assert all(s.category.lower() == "weather" for s in registry.endpoints("weather"))


def test_project_fixes_are_applied_with_their_reason(registry: Registry) -> None:
    spec = registry.get("spacex__query_launches")
    query = spec.parameter("query")
    assert query is not None and query.type == "object" and query.required
    assert any(r.startswith("project fix:") for r in spec.repairs)


def test_unknown_name_suggests_close_ones(registry: Registry) -> None:
    with pytest.raises(AahError, match="did you mean .*openmeteo__get_weather_forecast"):
        registry.get("openmeteo__get_weather_forcast")


@pytest.mark.parametrize(
    ("query", "expected_category"),
    [
        ("weather forecast", "Weather"),
        ("cryptocurrency price ticker", "Finance"),
        ("random joke", None),
        ("UK parliament members", None),
    ],
)
def test_search_puts_relevant_endpoints_first(
    registry: Registry, query: str, expected_category: str | None
) -> None:
    hits = registry.search(query, k=5)
    assert len(hits) == 5
    assert hits[0].score >= hits[-1].score
    if expected_category:
        assert all(h.spec.category == expected_category for h in hits)
    elif "joke" in query:
        assert "joke" in (hits[0].spec.qualified_name + hits[0].spec.description).lower()
    else:
        assert hits[0].spec.tool.startswith("parliament_uk_members")


def test_search_is_stemmed_and_ignores_stopwords(registry: Registry) -> None:
    assert registry.search("forecasts", 3)[0].spec.category == "Weather"
    assert registry.search("what is the", 3) == []
    assert registry.search("", 3) == []


def test_search_is_fast(registry: Registry) -> None:
    # A loose bound; the real figure is printed by perf/registry_bench.py.
    started = time.perf_counter()
    for _ in range(50):
        registry.search("weather forecast for a city", 10)
    assert (time.perf_counter() - started) / 50 < 0.05


def test_name_words_split_identifiers() -> None:
    # Single letters say nothing in a search and are left out.
    assert name_words("get_weatherForecast v2 API") == "get weather forecast 2 api"


def test_missing_data_dir_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(AahError, match="aah data fetch"):
        build_registry(tmp_path, tmp_path / "r.db")


def test_fix_naming_an_unknown_endpoint_fails_the_build(shared_data: Path, tmp_path: Path) -> None:
    fixes = tmp_path / "fixes.yaml"
    fixes.write_text("- endpoint: openmeteo__nothing\n  reason: a typo in an endpoint's name\n")
    with pytest.raises(AahError, match="unknown endpoint 'openmeteo__nothing'"):
        build_registry(shared_data, tmp_path / "r.db", fixes)
    assert not (tmp_path / "r.db").exists()


def test_a_fix_for_a_tool_the_data_does_not_hold_is_left_out(
    shared_data: Path, tmp_path: Path
) -> None:
    fixes = tmp_path / "fixes.yaml"
    fixes.write_text("- endpoint: nope__nothing\n  reason: a tool this folder does not hold\n")
    report = build_registry(shared_data, tmp_path / "r.db", fixes, vectors=False)
    assert report.fixes_applied == [] and report.endpoints > 900


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- endpoint: x\n  reason: short\n", "not a valid fixes file"),
        (
            "- endpoint: x\n  reason: a long enough reason\n  set: {qualified_name: y}\n",
            "may be set",
        ),
        ("endpoint: x\n", "YAML list"),
    ],
)
def test_bad_fixes_files_are_rejected(tmp_path: Path, content: str, message: str) -> None:
    from aah.tools.importers.fixes import load_fixes

    path = tmp_path / "fixes.yaml"
    path.write_text(content)
    with pytest.raises(AahError, match=message):
        load_fixes(path)


def test_build_replaces_the_registry_atomically(shared_data: Path, tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    build_registry(shared_data, path)
    first = Registry(path).registry_hash
    build_registry(shared_data, path)
    assert Registry(path).registry_hash == first  # the same sources give the same hash
    assert not list(tmp_path.glob("*.partial"))


def test_build_json_report_from_the_cli(shared_data: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from aah.cli import app

    result = CliRunner().invoke(
        app,
        ["tools", "build", "--data", str(shared_data), "--json"],
        env={"AAH_REGISTRY": str(tmp_path / "r.db")},
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["endpoints"] == 956
    assert report["rejections"][0]["reason"]
    strict = CliRunner().invoke(
        app,
        ["tools", "build", "--data", str(shared_data), "--strict", "--json"],
        env={"AAH_REGISTRY": str(tmp_path / "r.db")},
    )
    assert strict.exit_code == 1


def test_form_encoded_endpoints_are_marked(registry: Registry) -> None:
    assert registry.get("urlhaus__query_url_info").body_encoding == "form"
    assert registry.get("wikimedia_org__post_media_math_check_type").body_encoding == "form"
    assert registry.get("postcodes__bulk_lookup_postcodes").body_encoding == "json"


def _clash_data(root: Path) -> Path:
    spec = (
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\n"
        "servers: [{url: 'https://%s.example.org'}]\n"
        "paths:\n  /thing: {get: {operationId: get_thing}}\n  /other: {get: {operationId: other}}\n"
    )
    tools = root / "fail-talms" / "tools" / "Demo"
    tools.mkdir(parents=True)
    (tools / "clash.json").write_text(
        json.dumps(
            {
                "tool_name": "clash",
                "api_list": [{"name": "get_thing", "url": "https://clash.example.org/thing"}],
            }
        )
    )
    (root / "openapi").mkdir()
    (root / "openapi" / "clash__1.yaml").write_text(spec % "one")
    (root / "openapi" / "clash__2.yaml").write_text(spec % "two")
    return root


def test_name_clashes_are_rejected_per_endpoint_not_for_the_build(tmp_path: Path) -> None:
    report = build_registry(_clash_data(tmp_path / "data"), tmp_path / "r.db")
    registry = Registry(report.path)
    # Fail-TaLMs names (the ones benchmark tasks call) win; the first
    # OpenAPI file keeps the names no one held before it.
    assert registry.get("clash__get_thing").source.kind == "fail-talms"
    assert registry.get("clash__other").source.file == "clash__1.yaml"
    reasons = {(r.source.file, r.name): r.reason for r in report.rejections}
    assert reasons == {
        ("clash__1.yaml", "get_thing"): (
            "name 'clash__get_thing' is already the fail-talms endpoint from "
            "tools/Demo/clash.json: left out (rename the tool or the operation)"
        ),
        ("clash__2.yaml", "get_thing"): (
            "name 'clash__get_thing' is already the fail-talms endpoint from "
            "tools/Demo/clash.json: left out (rename the tool or the operation)"
        ),
        ("clash__2.yaml", "other"): (
            "name 'clash__other' is already the openapi endpoint from "
            "clash__1.yaml: left out (rename the tool or the operation)"
        ),
    }
    assert report.endpoints == 2


def test_cli_prints_one_whole_line_per_rejection(shared_data: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from aah.cli import app

    result = CliRunner().invoke(
        app,
        ["tools", "build", "--data", str(shared_data), "--max-spec-mb", "0.05"],
        env={"AAH_REGISTRY": str(tmp_path / "r.db"), "COLUMNS": "60"},
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        "  openapi:parliament.uk_members__v1.yaml: is 80,391 bytes, over the 50,000-byte cap "
        "on a spec file (raise it with `aah tools build --max-spec-mb`)"
    ) in lines
    assert (
        "  fail-talms:tools/HumanInteract/humaninteract.json interact_with_human: the paper's "
        "ask-the-human tool, not an HTTP endpoint: aah's built-in ask_human replaces it"
    ) in lines
