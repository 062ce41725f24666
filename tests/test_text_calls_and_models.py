import pytest
from langchain_core.messages import AIMessage

from aah.config import Settings
from aah.errors import AahError
from aah.llm import model_config
from aah.llm.text_calls import parse_text_tool_calls, recover_text_tool_calls
from aah.runtime.awareness import parse_awareness

TOOLS = {"get_weather", "ask_human"}


@pytest.mark.parametrize(
    ("text", "name", "arguments"),
    [
        (
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
            "get_weather",
            {"city": "Paris"},
        ),
        (
            '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n</tool_call>',
            "get_weather",
            {"city": "Rome"},
        ),
        (
            '{"name": "get_weather", "arguments": {"city": "Paris"}}',
            "get_weather",
            {"city": "Paris"},
        ),
        (
            '{"name": "get_weather", "parameters": {"city": "Oslo"}}',
            "get_weather",
            {"city": "Oslo"},
        ),
        (
            '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}',
            "get_weather",
            {"city": "Oslo"},
        ),
        ('get_weather(city="Paris", days=3)', "get_weather", {"city": "Paris", "days": 3}),
        (
            'Let me check.\n```json\n{"name": "get_weather", "arguments": {"city": "Bern"}}\n```',
            "get_weather",
            {"city": "Bern"},
        ),
        ('ask_human(question="Which city?")', "ask_human", {"question": "Which city?"}),
    ],
)
def test_text_calls_are_recovered(text: str, name: str, arguments: dict[str, object]) -> None:
    parsed = parse_text_tool_calls(text, TOOLS)
    assert parsed.invalid is None
    assert parsed.calls == [(name, arguments)]


def test_several_hermes_calls() -> None:
    text = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}</tool_call>'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "B"}}</tool_call>'
    )
    assert [c.arguments["city"] for c in parse_text_tool_calls(text, TOOLS).calls] == ["A", "B"]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "get_weather", "arguments": {city: Paris}}</tool_call>',
        "<tool_call></tool_call>",
        '{"name": "get_weather", "arguments": {"city": "Paris"}',
        'get_weather("Paris")',
        '{"name": "get_weather", "arguments": "not json"}',
    ],
)
def test_broken_attempts_are_invalid_calls_not_answers(text: str) -> None:
    parsed = parse_text_tool_calls(text, TOOLS)
    assert parsed.calls == [] and parsed.invalid
    assert parsed.attempted


@pytest.mark.parametrize(
    "text",
    [
        "I cannot help with that.",
        "The weather in Paris is sunny.",
        'Here is the code you asked for:\n```python\nget_weather(city="Paris")\n```',
        '```json\n{"name": "Alice", "age": 30}\n```',
        'print("hello")',
        "Which city do you mean?",
    ],
)
def test_plain_text_and_user_code_are_not_calls(text: str) -> None:
    assert not parse_text_tool_calls(text, TOOLS).attempted


def test_recover_moves_text_calls_into_tool_calls() -> None:
    message = AIMessage(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "X"}}</tool_call>'
    )
    fixed = recover_text_tool_calls(message, TOOLS)
    assert fixed.tool_calls[0]["name"] == "get_weather" and fixed.content == ""


def test_recover_marks_broken_attempts_invalid() -> None:
    fixed = recover_text_tool_calls(AIMessage("<tool_call>{oops</tool_call>"), TOOLS)
    assert fixed.tool_calls == [] and len(fixed.invalid_tool_calls) == 1


def test_recover_leaves_answers_alone() -> None:
    message = AIMessage("It is sunny.")
    assert recover_text_tool_calls(message, TOOLS) is message


@pytest.mark.parametrize(
    ("text", "answer", "reason"),
    [
        ("Yes, I have everything.", "yes", "I have everything."),
        ("yes", "yes", ""),
        ("IDK - the date may be missing", "idk", "the date may be missing"),
        ("**No**: the city is missing.", "no", "the city is missing."),
        ("I don't know. Perhaps.", "idk", "Perhaps."),
        ('"No." The tool is absent.', "no", "The tool is absent."),
        ("NO. nothing", "no", "nothing"),
    ],
)
def test_awareness_parsing(text: str, answer: str, reason: str) -> None:
    assert parse_awareness(text) == (answer, reason)


@pytest.mark.parametrize("text", ["Nope.", "Not sure", "Yesterday it was", "Maybe", "", "Noted"])
def test_awareness_parsing_rejects_other_openings(text: str) -> None:
    assert parse_awareness(text) is None


def test_roles_fall_back_to_the_agent_settings() -> None:
    settings = Settings(base_url="http://h/v1", model="m1", api_key="k", grader_model="g1")
    assert model_config("grader", settings).model == "g1"
    assert model_config("grader", settings).base_url == "http://h/v1"
    assert model_config("human", settings).model == "m1"
    assert model_config("agent", settings, model="m2").model == "m2"


def test_missing_model_is_one_line_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AahError, match="set AAH_MODEL and AAH_BASE_URL .or AAH_GRADER_MODEL"):
        model_config("grader", Settings())


def test_openai_key_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    config = model_config("agent", Settings(model="m"))
    assert config.api_key.get_secret_value() == "sk-from-env"
    assert "sk-from-env" not in str(config.describe())


@pytest.mark.parametrize(
    "text", ['{"name": "Alice", "age": 30}', '[{"name": "a"}, {"name": "b"}]', '{"city": "Paris"}']
)
def test_json_data_answers_are_not_calls(text: str) -> None:
    assert not parse_text_tool_calls(text, TOOLS).attempted


def test_bare_json_naming_an_offered_tool_is_a_call_even_without_arguments() -> None:
    assert parse_text_tool_calls('{"name": "get_weather"}', TOOLS).calls == [("get_weather", {})]


def test_bare_json_call_to_an_unknown_tool_is_still_a_call() -> None:
    parsed = parse_text_tool_calls('{"name": "book_table", "arguments": {"n": 2}}', TOOLS)
    assert parsed.calls == [("book_table", {"n": 2})]  # the checks answer it with IFN
