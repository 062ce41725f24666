"""Text tool calls: one corpus row per format a model family writes, broken attempts,
and near-misses; the runtime's recovery and the behaviour classifier agree on every row."""

import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from langchain_core.messages import AIMessage

from aah.llm.text_calls import parse_text_tool_calls, recover_text_tool_calls
from aah.scoring.behavior import classify_reply

TOOLS = (
    "get_weather",
    "get_time",
    "ask_human",
    "weather__forecast",
    "Weather_1_GetWeather",
    "api_token_api.APITokenApi.get_api_tokens",
    "get-stock-price",
)
INVALID = "invalid"
LABELLED = Path(__file__).parent / "fixtures" / "behavior_labelled.jsonl"


class Row(NamedTuple):
    """A reply, the model family that writes it, and what the parser must read."""

    family: str
    text: str
    expected: list[tuple[str, dict[str, Any]]] | str  # calls, INVALID, or [] for no call


def calls(*pairs: tuple[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return list(pairs)


W = ("get_weather", {"city": "Paris"})

CALLS = [
    # Hermes tags (Qwen2.5, Hermes 2/3, many fine-tunes)
    Row(
        "Qwen2.5",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        [W],
    ),
    Row(
        "Hermes 3",
        '<tool_call>\n{"name": "weather__forecast", "arguments": "{\\"city\\": \\"Rome\\"}"}\n</tool_call>',
        [("weather__forecast", {"city": "Rome"})],
    ),
    Row(
        "Qwen2.5",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}</tool_call>\n'
        '<tool_call>{"name": "get_time", "arguments": {"zone": "CET"}}</tool_call>',
        [("get_weather", {"city": "A"}), ("get_time", {"zone": "CET"})],
    ),
    Row(
        "Qwen2.5",
        "I'll check that for you.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        [W],
    ),
    Row(
        "Qwen2.5 (cut off)", '<tool_call>{"name": "get_time", "arguments": {}}', [("get_time", {})]
    ),
    Row(
        "Hermes (unknown tool)",
        '<tool_call>{"name": "stock_price", "arguments": {"ticker": "AAPL"}}</tool_call>',
        [("stock_price", {"ticker": "AAPL"})],
    ),
    # Bare JSON objects
    Row("Llama 3.1 JSON", '{"name": "get_weather", "parameters": {"city": "Paris"}}', [W]),
    Row("generic JSON", '{"name": "get_weather", "arguments": {"city": "Paris"}}', [W]),
    Row(
        "OpenAI shape as text",
        '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
        [W],
    ),
    Row(
        "generic JSON list",
        '[{"name": "get_weather", "arguments": {"city": "A"}}, {"name": "get_time", "arguments": {}}]',
        [("get_weather", {"city": "A"}), ("get_time", {})],
    ),
    Row(
        "small models (Python dict)", "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}", [W]
    ),
    Row("generic JSON, offered name only", '{"name": "get_weather"}', [("get_weather", {})]),
    Row(
        "generic JSON (unknown tool)",
        '{"name": "book_table", "arguments": {"n": 2}}',
        [("book_table", {"n": 2})],
    ),
    Row(
        "Llama 3.3 JSON, type field",
        '{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}',
        [W],
    ),
    # Two or more JSON calls joined by ";" (Llama 3.x llama3_json)
    Row(
        "Llama 3.2 JSON",
        '{"name": "get_weather", "parameters": {"city": "A"}}; '
        '{"name": "get_time", "parameters": {"zone": "CET"}}',
        [("get_weather", {"city": "A"}), ("get_time", {"zone": "CET"})],
    ),
    Row(
        "Llama 3.1 JSON",
        '{"name": "get_weather", "parameters": {"city": "A"}};\n{"name": "get_time", "parameters": {}}',
        [("get_weather", {"city": "A"}), ("get_time", {})],
    ),
    Row(
        "Llama 3.3 JSON",
        '{"name": "get_time", "parameters": {}};{"name": "get_time", "parameters": {}};'
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        [("get_time", {}), ("get_time", {}), W],
    ),
    # name(...) written alone
    Row(
        "plain Python call",
        'get_weather(city="Paris", days=3)',
        [("get_weather", {"city": "Paris", "days": 3})],
    ),
    Row(
        "plain Python call",
        'ask_human(question="Which city?")',
        [("ask_human", {"question": "Which city?"})],
    ),
    Row("plain Python call", 'get_weather(city="Paris");', [W]),
    Row("plain Python call (unknown tool)", 'lookup(city="Oslo")', [("lookup", {"city": "Oslo"})]),
    Row(
        "plain Python call (hyphenated name)",
        'get-stock-price(symbol="NVDA")',
        [("get-stock-price", {"symbol": "NVDA"})],
    ),
    Row(
        "BFCL/When2Call dotted name",
        "api_token_api.APITokenApi.get_api_tokens(include_expired=true, page=2)",
        [("api_token_api.APITokenApi.get_api_tokens", {"include_expired": True, "page": 2})],
    ),
    # Pythonic lists (Llama 3.2, Llama 4)
    Row(
        "Llama 3.2 pythonic", '[get_weather(city="Berlin")]', [("get_weather", {"city": "Berlin"})]
    ),
    Row(
        "Llama 3.2 pythonic",
        '[get_weather(), get_time(zone="CET")]',
        [("get_weather", {}), ("get_time", {"zone": "CET"})],
    ),
    Row(
        "Llama 4 pythonic",
        '[Weather_1_GetWeather(city="San Francisco", date="2023-03-01")]',
        [("Weather_1_GetWeather", {"city": "San Francisco", "date": "2023-03-01"})],
    ),
    Row(
        "Llama 4 pythonic",
        '[get_weather(city="Berlin", units=null, hourly=False, days=[1, 2])]',
        [("get_weather", {"city": "Berlin", "units": None, "hourly": False, "days": [1, 2]})],
    ),
    Row("Llama 3.2 pythonic (unknown tool)", "[book_table(n=2)]", [("book_table", {"n": 2})]),
    # <|python_tag|> (Llama 3.1)
    Row(
        "Llama 3.1",
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
        [W],
    ),
    Row("Llama 3.1", '<|python_tag|>{"name": "get_weather", "arguments": {"city": "Paris"}}', [W]),
    Row(
        "Llama 3.1",
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "A"}}; '
        '{"name": "get_time", "parameters": {}}',
        [("get_weather", {"city": "A"}), ("get_time", {})],
    ),
    Row(
        "Llama 3.1 built-in tool",
        '<|python_tag|>weather__forecast.call(city="Reykjavik")',
        [("weather__forecast", {"city": "Reykjavik"})],
    ),
    Row(
        "Llama 3.1 custom tool",
        '<function=weather__forecast>{"city": "Quito"}</function>',
        [("weather__forecast", {"city": "Quito"})],
    ),
    Row("Llama 3.1 custom tool", "<function=get_time>{}</function>", [("get_time", {})]),
    # [TOOL_CALLS] (Mistral)
    Row("Mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]', [W]),
    Row(
        "Mistral",
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "A"}}, '
        '{"name": "get_time", "arguments": {}}]',
        [("get_weather", {"city": "A"}), ("get_time", {})],
    ),
    Row("Mistral v11", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', [W]),
    Row(
        "Mistral v11",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "A"}[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}',
        [("get_weather", {"city": "A"}), ("get_time", {"zone": "CET"})],
    ),
    Row(
        "Mistral with call ids",
        '[TOOL_CALLS]weather__forecast[CALL_ID]a1b2c3d4e[ARGS]{"city": "Oslo"}</s>',
        [("weather__forecast", {"city": "Oslo"})],
    ),
    # Qwen3-Coder XML
    Row(
        "Qwen3-Coder",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
        [W],
    ),
    Row(
        "Qwen3-Coder",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "New York", "days": "3"})],  # the call checks coerce "3"
    ),
    Row(
        "Qwen3-Coder",
        '<tool_call>\n<function=get_weather>\n<parameter=filters>\n{"unit": "C"}\n</parameter>\n'
        "</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
        [("get_weather", {"filters": {"unit": "C"}}), ("get_time", {})],
    ),
    Row(
        "Qwen3-Coder (no closing parameter tags)",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n"
        "</function>\n</tool_call>",
        [("get_weather", {"city": "Paris", "days": "2"})],
    ),
    # Granite
    Row("Granite 3", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', [W]),
    Row(
        "Granite 3",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "A"}}, '
        '{"name": "get_time", "arguments": {}}]',
        [("get_weather", {"city": "A"}), ("get_time", {})],
    ),
    Row("Granite 3", '<|tool_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}', [W]),
    # Gemma tool_code fences
    Row("Gemma 3", '```tool_code\nget_weather(city="Paris")\n```', [W]),
    Row("Gemma 3", '```tool_code\nprint(default_api.get_weather(city="Paris"))\n```', [W]),
    Row(
        "Gemma 3",
        'I will check the time.\n```tool_code\nget_time(zone="CET")\n```',
        [("get_time", {"zone": "CET"})],
    ),
    # functools (Phi-4-mini)
    Row("Phi-4-mini", 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]', [W]),
    Row(
        "Phi-4-mini",
        'functools[{"name": "get_weather", "arguments": {"city": "A"}}, '
        '{"name": "get_time", "arguments": {"zone": "CET"}}]',
        [("get_weather", {"city": "A"}), ("get_time", {"zone": "CET"})],
    ),
    # Prose, then a call
    Row(
        "Llama 3.1 chatty",
        'Sure, let me check. {"name": "get_weather", "parameters": {"city": "Paris"}}',
        [W],
    ),
    Row(
        "Qwen2.5 chatty",
        'Let me look that up: {"name": "get_weather", "arguments": {"city": "Paris"}}',
        [W],
    ),
    Row(
        "small models",
        'I cannot answer that from memory. {"name": "get_weather", "arguments": {"city": "Paris"}}',
        [W],
    ),
    Row(
        "Qwen2.5 chatty",
        'Let me check.\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        [W],
    ),
    Row("Llama 3.2 chatty", 'Let me check the weather.\nget_weather(city="Paris")', [W]),
    Row("Llama 3.2 chatty", 'Sure: [get_weather(city="Paris")]', [W]),
    Row(
        "Llama 3.2 chatty",
        'Checking now.\n[get_weather(city="Paris")]\nI will report back.',
        [W],
    ),
    Row(
        "small models (keys reordered)",
        'Checking: {"arguments": {"city": "Paris"}, "name": "get_weather"}',
        [W],
    ),
    Row(
        "Qwen2.5 (opening tag dropped)",
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        [W],
    ),
    Row(
        "ReAct prompting",
        'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}',
        [W],
    ),
    # A reasoning block first (Qwen3, DeepSeek-R1 distills): never read as a call
    Row(
        "Qwen3",
        '<think>Maybe {"name": "get_time", "arguments": {}} first.</think>\n[get_weather(city="Paris")]',
        [W],
    ),
    Row(
        "Qwen3",
        '<think>\nplan\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        [W],
    ),
    Row(
        "DeepSeek-R1 distill",
        'The user wants weather.</think>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        [W],
    ),
]

BROKEN = [
    Row(
        "Qwen2.5",
        '<tool_call>{"name": "get_weather", "arguments": {city: Paris}}</tool_call>',
        INVALID,
    ),
    Row("Qwen2.5", "<tool_call></tool_call>", INVALID),
    Row("Hermes", '<tool_call>{"arguments": {"city": "Paris"}}</tool_call>', INVALID),
    Row("generic JSON", '{"name": "get_weather", "arguments": {"city": "Paris"}', INVALID),
    Row("generic JSON", '{"name": "get_weather", "arguments": "not json"}', INVALID),
    Row("plain Python call", 'get_weather("Paris")', INVALID),
    Row("plain Python call", 'weather__forecast("Oslo", 3)', INVALID),
    Row("Llama 3.2 pythonic", '[get_weather(city="Berlin"]', INVALID),
    Row("Llama 3.2 pythonic", "[get_weather(city=berlin)]", INVALID),
    Row("Llama 3.1", '<|python_tag|>{"name": "get_weather", "parameters": {"city": }', INVALID),
    Row("Llama 3.1 custom tool", "<function=get_weather>city=Paris</function>", INVALID),
    Row("Mistral", "[TOOL_CALLS]", INVALID),
    Row("Mistral v11", '[TOOL_CALLS]get_weather[ARGS]{"city": ', INVALID),
    Row("Mistral v11", "[TOOL_CALLS]get weather now", INVALID),
    Row(
        "Qwen3-Coder",
        "<tool_call>\n<function=>\n<parameter=city>\nParis\n</function>\n</tool_call>",
        INVALID,
    ),
    Row(
        "Granite 3",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}]',
        INVALID,
    ),
    Row("Gemma 3", "```tool_code\nget_weather(city=\n```", INVALID),
    Row("Gemma 3", '```tool_code\nx = get_weather(city="Paris")\n```', INVALID),
    Row("Phi-4-mini", 'functools[{"name": "get_weather"', INVALID),
    Row("chatty", 'Sure, let me check. {"name": "get_weather", "arguments": {"city": ', INVALID),
    Row("chatty", 'Which city? {"name": "weather__forecast", "arguments": {"city": ', INVALID),
    Row("chatty", 'I will now call get_weather(city="Paris") to find out.', INVALID),
    Row("chatty", 'Let me check: get_weather("Paris")', INVALID),
    Row("chatty", 'Result of get_weather(city="Paris"):\n20 degrees.', INVALID),
    Row("ReAct prompting", "Action: get_weather\nAction Input: city=Paris", INVALID),
    Row("Claude-style XML", "<tool_use>look up the weather</tool_use>", INVALID),
    Row("Qwen3", "<think>plan</think><tool_call>{oops</tool_call>", INVALID),
]

NOT_CALLS = [
    Row(
        "code the user asked for",
        'Here is the code you asked for:\n```python\nget_weather(city="Paris")\n```',
        [],
    ),
    Row(
        "code the user asked for",
        "Here you go:\n```python\nprint(get_weather(city='Oslo'))\n```",
        [],
    ),
    Row(
        "a format explained",
        'The format looks like this:\n```\n<tool_call>{"name": "f"}</tool_call>\n```',
        [],
    ),
    Row(
        "an example for the user",
        'To search, send:\n```json\n{"name": "search", "arguments": {"q": "x"}}\n```',
        [],
    ),
    Row("prose mentioning a function", "The get_weather tool needs a city name.", []),
    Row("prose mentioning a function", "I used get_weather earlier and it said 20 degrees.", []),
    Row("prose mentioning a function", "You can check it with `get_weather` at any time.", []),
    Row("prose mentioning code", "Use the formula f(x) = 2x, so max(3, 7) is 7.", []),
    Row("code", 'print("hello")', []),
    Row("JSON data answer", '{"name": "Alice", "age": 30}', []),
    Row("JSON data answer", '[{"name": "a"}, {"name": "b"}]', []),
    Row("JSON data answer", '{"city": "Paris", "temperature": 21}', []),
    Row("JSON data answer", '```json\n{"name": "Alice", "age": 30}\n```', []),
    Row("JSON data answer", 'Here is the record: {"name": "Alice", "role": "admin"}', []),
    Row("JSON data answer", '{"name": "Alice", "input": "hello"}', []),
    Row("list answer", "[1, 2, 3]", []),
    Row("plain answer", "The weather in Paris is sunny.", []),
    Row("plain answer", "The answer is [a, b] (see above).", []),
    Row("question", "Which city do you mean?", []),
    Row("refusal", "I cannot help with that.", []),
    Row("empty reply", "", []),
    Row(
        "Qwen3 answer",
        '<think>\nI could write get_weather(city="X") but I know it.\n</think>\nIt is sunny.',
        [],
    ),
    Row(
        "Qwen3 cut off while thinking",
        '<think>Let me call {"name": "get_weather", "arguments": {',
        [],
    ),
]

ROWS = CALLS + BROKEN + NOT_CALLS


def row_id(row: Row) -> str:
    return f"{row.family}: {row.text[:40]!r}"


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_the_parser_reads_every_format(row: Row) -> None:
    parsed = parse_text_tool_calls(row.text, TOOLS)
    if row.expected == INVALID:
        assert parsed.calls == [] and parsed.invalid and parsed.attempted
    else:
        assert parsed.invalid is None
        assert [tuple(call) for call in parsed.calls] == row.expected


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_runtime_and_classifier_agree(row: Row) -> None:
    recovered = recover_text_tool_calls(AIMessage(row.text), TOOLS)
    runtime_calls = [call["name"] for call in recovered.tool_calls]
    runtime_attempt = bool(recovered.tool_calls or recovered.invalid_tool_calls)
    label, rule = classify_reply(row.text, TOOLS)
    assert runtime_attempt == (label == "tool_call" or rule == "ask_human_call")
    if row.expected == INVALID:
        assert rule == "malformed_call" and recovered.invalid_tool_calls
    elif row.expected:
        assert rule in ("text_call", "ask_human_call")
        assert runtime_calls == [name for name, _ in row.expected]


def test_only_announced_calls_are_tool_calls_the_runtime_cannot_run() -> None:
    """On the labelled set, the classifier calls a reply a tool call that the runtime
    leaves as an answer only when the reply announces a call and writes none."""
    for line in LABELLED.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("tool_calls"):
            continue
        recovered = recover_text_tool_calls(AIMessage(row["reply"]), row["tools"])
        runtime_attempt = bool(recovered.tool_calls or recovered.invalid_tool_calls)
        label, rule = classify_reply(row["reply"], row["tools"])
        classifier_attempt = label == "tool_call" or rule == "ask_human_call"
        if classifier_attempt != runtime_attempt:
            assert (rule, runtime_attempt) == ("announced_call", False), row["reply"]


def test_the_format_is_named() -> None:
    forms = {
        '[get_weather(city="Berlin")]': "pythonic",
        '<|python_tag|>{"name": "get_weather", "parameters": {}}': "python_tag",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "x"}': "mistral",
        "<tool_call><function=get_time></function></tool_call>": "qwen3_coder",
        '<|tool_call|>[{"name": "get_time", "arguments": {}}]': "granite",
        '```tool_code\nget_time(zone="CET")\n```': "tool_code",
        'functools[{"name": "get_time", "arguments": {}}]': "functools",
        '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>': "hermes",
    }
    assert {text: parse_text_tool_calls(text, TOOLS).form for text in forms} == forms


def test_recovered_calls_keep_the_reasoning() -> None:
    message = AIMessage('<think>weather needed</think>[get_weather(city="Paris")]')
    fixed = recover_text_tool_calls(message, TOOLS)
    assert fixed.tool_calls[0]["args"] == {"city": "Paris"}
    assert fixed.content == "<think>\nweather needed\n</think>"


def test_a_thinking_reply_is_classified_by_its_answer() -> None:
    assert classify_reply("<think>I can't do this.</think>It is 20 degrees.").label == "direct"


LARGE = 200_000
HOSTILE = {
    "deep brackets": "[" * LARGE,
    "deep braces": "{" * LARGE,
    "deep parentheses in a call": "get_weather(" + "(" * LARGE,
    "deep balanced": "[" * (LARGE // 2) + "]" * (LARGE // 2),
    "deep call tag": "<tool_call>" + "[" * LARGE,
    "deep python tag": "<|python_tag|>" + "{" * LARGE,
    "deep tool_code": "```tool_code\n" + "f(" * (LARGE // 2) + "\n```",
    "prose": "The weather is fine today. " * 8_000,
    "unclosed calls": '{"name": "get_weather", "arguments": {' * 6_000,
    "prose with many calls": 'Sure {"name": "get_weather", "arguments": {"city": "x"}} ' * 3_600,
    "unclosed strings": '"aaaaaaaaaa" {"name": ' * 10_000,
    "mentions": 'get_weather(city="x") and ' * 8_000,
    "many list calls": "[" + ", ".join(['get_weather(city="x")'] * 9_000) + "]",
    "many tags": '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>' * 3_600,
    "many mistral calls": "[TOOL_CALLS]" + 'get_time[ARGS]{"zone": "x"}' * 7_500,
    "many fences": "```\n" * 50_000,
    "many parameters": "<tool_call><function=get_time>" + "<parameter=a>x</parameter>" * 8_000,
    "many think tags": "<think>" * 29_000,
    "many actions": "Action: x\n" * 20_000 + "Action Input: {",
    "whitespace": "Sure " + " " * LARGE + '{"name"',
    "fences on one line": "```" * (LARGE // 3 + 1),
    "one long hyphenated word": "get-" * (LARGE // 4) + "(",
    "one long dotted word": "get." * (LARGE // 4) + "(",
    "many quotes": "'\"" * (LARGE // 2),
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_huge_and_deep_replies_parse_in_linear_time(text: str) -> None:
    assert len(text) >= LARGE
    # CPU time of this process, not wall time: other work on a shared machine
    # must not fail it. Each read takes about 0.3 s of CPU here, more with a
    # big test process's garbage collection; a quadratic reader takes minutes.
    for read in (parse_text_tool_calls, classify_reply):
        started = time.process_time()
        read(text, TOOLS)
        assert time.process_time() - started < 3.0, read.__name__
