import json

import pytest

from aah.tools.builtin import ASK_HUMAN
from aah.tools.calls.arguments import arguments_model, field_name, parameters_schema
from aah.tools.calls.checks import CallChecker
from aah.tools.calls.wrap import ask_human_schema, tool_description, wrap_endpoint
from aah.tools.spec import EndpointSource, EndpointSpec, ParameterSpec, ParamLocation

LAT = ParameterSpec(name="lat", type="number", required=True, description="Latitude")
UNIT = ParameterSpec(name="unit", type="string", enum=["metric", "british"], default="metric")
TAGS = ParameterSpec(name="tags", type="array", items_type="string")


@pytest.fixture
def checker() -> CallChecker:
    return CallChecker({"weather__forecast": [LAT, UNIT, TAGS], ASK_HUMAN: []})


def test_unknown_tool_lists_choices(checker: CallChecker) -> None:
    result = checker.check("weather__forcast", {"lat": 1})
    assert result.code == "IFN"
    assert "weather__forecast" in result.feedback and "ask_human" in result.feedback


def test_unknown_argument_lists_valid_ones(checker: CallChecker) -> None:
    result = checker.check("weather__forecast", {"lat": 1, "lon": 2})
    assert result.code == "IAN"
    assert "'lon'" in result.feedback and "lat (number, required)" in result.feedback


@pytest.mark.parametrize(
    "arguments", [{"lat": "north"}, {"lat": 1, "tags": "a,b"}, {"lat": 1, "unit": 3}]
)
def test_wrong_type(checker: CallChecker, arguments: dict[str, object]) -> None:
    assert checker.check("weather__forecast", arguments).code == "IAT"


def test_missing_required_argument(checker: CallChecker) -> None:
    result = checker.check("weather__forecast", {"unit": "metric"})
    assert result.code == "IAV"
    assert "lat" in result.feedback and "ask the user" in result.feedback


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", 42])
def test_unparseable_arguments(checker: CallChecker, arguments: object) -> None:
    assert checker.check("weather__forecast", arguments).code == "IFE"


def test_exact_repeat_is_caught_but_a_changed_call_is_not(checker: CallChecker) -> None:
    assert checker.check("weather__forecast", {"lat": 1.5}).ok
    assert checker.check("weather__forecast", '{"lat": 1.5}').code == "RAC"
    assert checker.check("weather__forecast", {"lat": 2.5}).ok


def test_repeat_detection_survives_a_new_checker_given_seen_calls() -> None:
    first = CallChecker({"t__x": [LAT]})
    assert first.check("t__x", {"lat": 3}).ok
    from aah.tools.calls.checks import canonical_call

    second = CallChecker({"t__x": [LAT]}, seen=[canonical_call("t__x", {"lat": 3})])
    assert second.check("t__x", {"lat": 3}).code == "RAC"


def test_numeric_strings_are_accepted_as_numbers(checker: CallChecker) -> None:
    # Models often quote numbers; the API receives the same text either way.
    assert checker.check("weather__forecast", {"lat": "52.5"}).ok


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("post-title", "post_title"),
        ("from", "p_from"),
        ("2fa", "p_2fa"),
        ("_x", "p_x"),
        ("model_config", "p_model_config"),
        ("yyyy-mm-dd", "yyyy_mm_dd"),
    ],
)
def test_field_names_are_safe_identifiers(name: str, expected: str) -> None:
    assert field_name(name) == expected


def test_arguments_model_reads_and_writes_source_names() -> None:
    params = [ParameterSpec(name="post-title", required=True), ParameterSpec(name="from")]
    model = arguments_model("Args", params)
    value = model.model_validate({"post-title": "a", "from": "b"})
    assert value.model_dump(by_alias=True) == {"post-title": "a", "from": "b"}
    with pytest.raises(ValueError):
        model.model_validate({"post-title": "a", "extra": 1})


def test_parameters_schema_is_compact_json_schema() -> None:
    required_with_example = ParameterSpec(name="id", required=True, default="42")
    schema = parameters_schema([LAT, UNIT, TAGS, required_with_example])
    assert schema["required"] == ["lat", "id"]
    assert schema["properties"]["unit"] == {
        "type": "string",
        "enum": ["metric", "british"],
        "default": "metric",
    }
    assert schema["properties"]["tags"]["items"] == {"type": "string"}
    assert schema["properties"]["id"]["examples"] == ["42"]
    assert "anyOf" not in json.dumps(schema)


class RecordingExecutor:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []

    def call(self, spec: EndpointSpec, arguments: dict[str, object]) -> object:
        from aah.tools.http.executor import ToolResult

        self.calls.append((spec.qualified_name, arguments))
        return ToolResult(
            ok=True,
            status=200,
            text="200 OK {}",
            data={},
            latency_ms=1.0,
            url=spec.url_template,
            error=None,
            truncated=False,
            mode="mock",
            from_cache=False,
        )

    async def acall(self, spec: EndpointSpec, arguments: dict[str, object]) -> object:
        return self.call(spec, arguments)


def _spec() -> EndpointSpec:
    return EndpointSpec(
        tool="weather",
        category="Weather",
        name="forecast",
        qualified_name="weather__forecast",
        description="Forecast for a place.",
        url_template="https://api.example.org/forecast",
        parameters=[LAT, UNIT],
        source=EndpointSource(kind="fail-talms", file="x.json", id="1"),
    )


async def test_wrapped_tool_calls_the_executor_with_source_names() -> None:
    executor = RecordingExecutor()
    tool = wrap_endpoint(_spec(), executor)  # type: ignore[arg-type]
    assert tool.name == "weather__forecast"
    assert "API: weather, Weather" in tool.description
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "c1", "name": tool.name, "args": {"lat": 1.5}}
    )
    assert message.content == "200 OK {}"
    assert message.artifact.status == 200
    assert executor.calls == [("weather__forecast", {"lat": 1.5})]
    from langchain_core.utils.function_calling import convert_to_openai_tool

    function = convert_to_openai_tool(tool)["function"]
    assert function["parameters"]["required"] == ["lat"]


def test_long_descriptions_are_cut_for_the_function_limit() -> None:
    spec = _spec().model_copy(update={"description": "x" * 5000})
    assert len(tool_description(spec)) <= 1000


def test_ask_human_schema_has_one_required_question() -> None:
    schema = ask_human_schema()
    assert schema["function"]["name"] == "ask_human"
    assert schema["function"]["parameters"]["required"] == ["question"]


def test_parameter_location_default_is_query() -> None:
    assert ParameterSpec(name="q").location is ParamLocation.QUERY


async def test_wrapped_tool_coerces_arguments_with_the_generated_model() -> None:
    executor = RecordingExecutor()
    tool = wrap_endpoint(_spec(), executor)  # type: ignore[arg-type]
    await tool.ainvoke({"lat": "52.5", "unit": None})
    assert executor.calls == [("weather__forecast", {"lat": 52.5})]
    text = tool.invoke({"type": "tool_call", "id": "c", "name": tool.name, "args": {"lat": "x"}})
    assert "invalid arguments" in text.content and len(executor.calls) == 1


def test_openai_tool_matches_what_langchain_sends_for_the_wrapped_tool() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from aah.tools.calls.wrap import openai_tool

    spec = _spec()
    assert openai_tool(spec) == convert_to_openai_tool(wrap_endpoint(spec, RecordingExecutor()))  # type: ignore[arg-type]
